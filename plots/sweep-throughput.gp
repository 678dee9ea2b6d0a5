# sweep-throughput.gp: throughput against the swept value, one line per
# series (a policy, a variant, or a combination of the other swept values).
# Data (sweep.dat): one block per series, rows: x, throughput (output
# tokens/s), TTFT p99, TPOT p99, E2E p99 (ms), x as text (column 6); means
# over repeats; columns 7-10: the 95% confidence half-width of each mean
# (Student t over the repeats; 0 with one repeat), drawn as error bars.
# Variables: figtitle, who (the tenant, or all tenants), xtitle, nseries,
# series1..seriesN (names), categorical (1: x is a list of names), nrepeats (repeats per point).
load common
# the series side by side at each x (dodged: 6% of a category, 1.2% of a number's value), and the
# bars named: each mean's 95% interval over the repeats
dx(x, i) = categorical ? x + 0.06 * (i - (nseries + 1) / 2.0) : x * (1 + 0.012 * (i - (nseries + 1) / 2.0))
bars = (nrepeats > 1) ? sprintf("bars: 95%% interval of each mean over %d repeats (Student's t)", nrepeats) : "one repeat: no interval"
set title sprintf("%s\nthroughput of %s; %s", figtitle, who, bars)
set xlabel xtitle
set ylabel 'throughput (output tokens/s)'
set yrange [0:*]
set offsets graph 0.03, graph 0.03, graph 0.08, 0
set key top left
if (categorical) {
  plot for [i=1:nseries] data index (i-1) using (dx($1, i)):2:7:xtic(6) with yerrorlines lt i \
       title value(sprintf('series%d', i))
} else {
  plot for [i=1:nseries] data index (i-1) using (dx($1, i)):2:7 with yerrorlines lt i \
       title value(sprintf('series%d', i))
}
