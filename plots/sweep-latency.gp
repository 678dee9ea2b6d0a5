# sweep-latency.gp: p99 time to first token (log scale) and p99 time per
# output token against the swept value, one line per series. Data and
# variables: as sweep-throughput.gp.
load common
set multiplot layout 1, 2 title sprintf("%s\np99 latency of %s", figtitle, who)
set xlabel xtitle
set offsets graph 0.03, graph 0.03, graph 0.08, 0
set key top left
set ylabel 'TTFT p99 (ms, log scale)'
set logscale y
set format y '%.0f'
if (categorical) {
  plot for [i=1:nseries] data index (i-1) using 1:3:8:xtic(6) with yerrorlines lt i \
       title value(sprintf('series%d', i))
} else {
  plot for [i=1:nseries] data index (i-1) using 1:3:8 with yerrorlines lt i \
       title value(sprintf('series%d', i))
}
unset logscale y
set format y '%g'
set ylabel 'TPOT p99 (ms)'
set yrange [0:*]
if (categorical) {
  plot for [i=1:nseries] data index (i-1) using 1:4:9:xtic(6) with yerrorlines lt i \
       title value(sprintf('series%d', i))
} else {
  plot for [i=1:nseries] data index (i-1) using 1:4:9 with yerrorlines lt i \
       title value(sprintf('series%d', i))
}
unset multiplot
