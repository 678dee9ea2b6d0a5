# compare.gp: one experiment under several variants side by side (ema-sim
# run of a file with compare:): the borrower's output tokens/s and the
# memory it had borrowed over time, one line per variant; the CDFs of its
# TTFT and of the lenders' TTFT (all lenders' requests together).
# Data: compare-timeline.dat (one block per variant: time_s, tokens/s,
# borrowed GiB), compare-borrower-ttft.dat and compare-lenders-ttft.dat (one
# block per variant: TTFT ms, fraction at or below). Variables: figtitle,
# borrower, bin (the timeline's sample period: each throughput point is one), nseries,
# series1..seriesN (the variants), borrower_ttfts and lender_ttfts (the TTFTs in each
# CDF, all variants together), timeline_points (the timeline's points, all variants together:
# none where the run is shorter than its sample period).
load common
set multiplot layout 2, 2 title sprintf("%s\nthe borrower (%s) and its lenders under each variant", figtitle, borrower)
set key top right
set xlabel 'time (s)'
set ylabel sprintf('output tokens/s (per %s sample)', bin)
set yrange [0:*]
set title sprintf('%s: throughput', borrower)
if (timeline_points > 0) {
  plot for [i=1:nseries] 'compare-timeline.dat' index (i-1) using 1:2 with lines lt i \
       title value(sprintf('series%d', i))
} else {
  note = 'no two timeline samples (the run is shorter than its sample period)'
  eval empty_panel
  set yrange [0:*]
  set key top right
}
set ylabel 'borrowed from peers (GiB)'
set title sprintf('%s: memory borrowed', borrower)
if (timeline_points > 0) {
  plot for [i=1:nseries] 'compare-timeline.dat' index (i-1) using 1:3 with lines lt i \
       title value(sprintf('series%d', i))
} else {
  eval empty_panel
}
set key bottom right
set ylabel 'fraction of requests'
set yrange [0:1.02]
set xlabel 'time to first token (ms, log scale)'
set logscale x
set format x '%.0f'
set autoscale xfix                # the axis ends where the data do
# a CDF of no TTFT at all (no lenders, or no request got its first token) is an empty
# panel that says so: gnuplot cannot place an axis on no points
set title sprintf('%s: TTFT', borrower)
if (borrower_ttfts > 0) {
  plot for [i=1:nseries] 'compare-borrower-ttft.dat' index (i-1) using 1:2 with steps lt i \
       title value(sprintf('series%d', i))
} else {
  note = 'no request of the borrower got its first token'
  eval empty_panel
  set yrange [0:1.02]
  set autoscale xfix
}
set title 'lenders: TTFT'
if (lender_ttfts > 0) {
  plot for [i=1:nseries] 'compare-lenders-ttft.dat' index (i-1) using 1:2 with steps lt i \
       title value(sprintf('series%d', i))
} else {
  note = 'no lender got a first token (or there are no lenders)'
  eval empty_panel
  set yrange [0:1.02]
  set autoscale xfix
}
unset multiplot
