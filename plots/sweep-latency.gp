# sweep-latency.gp: p99 time to first token (log scale) and p99 time per
# output token against the swept value, one line per series. Data and
# variables: as sweep-throughput.gp, and ttft_points (the points whose TTFT p99 is above 0).
load common
# the series side by side at each x (dodged: 6% of a category, 1.2% of a number's value), and the
# bars named: each mean's 95% interval over the repeats
dx(x, i) = categorical ? x + 0.06 * (i - (nseries + 1) / 2.0) : x * (1 + 0.012 * (i - (nseries + 1) / 2.0))
bars = (nrepeats > 1) ? sprintf("bars: 95%% interval of each mean over %d repeats (Student's t)", nrepeats) : "one repeat: no interval"
set multiplot layout 1, 2 title sprintf("%s\np99 latency of %s; %s", figtitle, who, bars)
set xlabel xtitle
set offsets graph 0.03, graph 0.03, graph 0.08, 0
set key top left
set ylabel 'TTFT p99 (ms, log scale)'
set logscale y
set format y '%.0f'
if (ttft_points == 0) {
  # no point's requests got a first token (its p99 is 0, which a log axis cannot show)
  unset logscale y
  note = 'no request got its first token at any point'
  eval empty_panel
  set key top left
} else {
  if (categorical) {
    plot for [i=1:nseries] data index (i-1) using (dx($1, i)):3:8:xtic(6) with yerrorlines lt i \
         title value(sprintf('series%d', i))
  } else {
    plot for [i=1:nseries] data index (i-1) using (dx($1, i)):3:8 with yerrorlines lt i \
         title value(sprintf('series%d', i))
  }
}
unset logscale y
set format y '%g'
set ylabel 'TPOT p99 (ms)'
set yrange [0:*]
if (categorical) {
  plot for [i=1:nseries] data index (i-1) using (dx($1, i)):4:9:xtic(6) with yerrorlines lt i \
       title value(sprintf('series%d', i))
} else {
  plot for [i=1:nseries] data index (i-1) using (dx($1, i)):4:9 with yerrorlines lt i \
       title value(sprintf('series%d', i))
}
unset multiplot
