# frontier.gp: the transparency frontier per server (make-figure feeds it).
# x: KV tokens a decode step reads (batch x context); y: the largest share
# of them that can be remote with the step within 5% of all-local, when
# prefetched layer groups ahead. One line per server model.
set terminal pngcairo size 900,560 font ",11"
set output outfile
set title "How much of a decode step's KV can be remote (prefetched) within 5% of all-local\nLlama-3.1-8B, one lender, no interference (ema-sim frontier)"
set xlabel "KV tokens read per step (batch x context)"
set ylabel "remote share of the KV (%)"
set logscale x
set yrange [0:105]
set key outside right top
set grid
plot for [i=0:*] datafile index i using 1:2 with linespoints title columnheader(1)
