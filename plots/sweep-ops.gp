# sweep-ops.gp: an ops sweep: each op's bandwidth against the swept value,
# one line per op (and series). Data (sweep-ops.dat): one block per line,
# rows: x, GB/s, seconds, -, -, x as text, then the 95% confidence
# half-widths of the means (error bars). Variables: figtitle, xtitle,
# nseries, series1..seriesN, categorical.
load common
set title sprintf("%s\nbandwidth of each op", figtitle)
set xlabel xtitle
set ylabel 'bandwidth (GB/s: bytes / op time)'
set yrange [0:*]
set offsets graph 0.03, graph 0.03, graph 0.08, 0
set key top left
if (categorical) {
  plot for [i=1:nseries] data index (i-1) using 1:2:7:xtic(6) with yerrorlines lt i \
       title value(sprintf('series%d', i))
} else {
  plot for [i=1:nseries] data index (i-1) using 1:2:7 with yerrorlines lt i \
       title value(sprintf('series%d', i))
}
