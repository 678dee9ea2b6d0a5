# frontier.gp: the transparency frontier per server (ema-sim frontier): x,
# the KV tokens a decode step reads (batch x context, log scale); y, the
# largest share of them that can be remote with the step within the
# tolerance of all-local: prefetched layer groups ahead (solid) and read
# directly by the kernels (dashed). Data (frontier.dat): one block per
# server, rows: tokens, prefetch share (%), direct share (%). Variables:
# figtitle, nseries, series1..seriesN (the servers).
load common
set title sprintf("%s\nremote share of a decode step's KV within the tolerance (solid: prefetch, dashed: direct)", figtitle)
set xlabel 'KV tokens read per step (batch x context, log scale)'
set ylabel 'remote share of the KV (%)'
set logscale x
set yrange [0:105]
set key outside right top
plot for [i=1:nseries] 'frontier.dat' index (i-1) using 1:2 with linespoints lt i \
       title value(sprintf('series%d', i)), \
     for [i=1:nseries] 'frontier.dat' index (i-1) using 1:3 with lines lt i dt 2 notitle
