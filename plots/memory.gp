# memory.gp: per GPU, its memory over time, stacked: local KV blocks, the
# staging buffer for prefetched remote KV, slices lent to peers (these three
# are in its own HBM), and slices borrowed from peers (their HBM) on top.
# The dashed line is the GPU's own KV region (on a GPU without a tenant,
# drawn only where it lent, the room it may lend: summary.json's idle_gpus);
# red marks are the samples where the slices it lends fell (a reclaim, or a
# borrower giving back).
# Data (memory.dat): one block per GPU, rows: time (s), local, staging,
# lent, borrowed, region (GiB), lent fell (0/1), remote KV (GiB), remote
# read rate (GB/s). Variables: figtitle, nseries, series1..seriesN (the
# GPUs' names), width, height.
load common
cols = (nseries > 1) ? 2 : 1
rows = (nseries + cols - 1) / cols
head = 100.0 / height            # the title and the key, across the top
pw = 1.0 / cols
ph = (1.0 - head) / rows
set multiplot title sprintf("%s\nmemory per GPU over time", figtitle)
set style fill solid 0.85 noborder

# the key alone: a plot with nothing inside its ranges
set origin 0, 1.0 - head
set size 1, head - 40.0 / height
unset border
unset tics
set xrange [0:1]
set yrange [0:1]
set key center center horizontal Left reverse maxrows 1 samplen 2 width -1
plot -1 with filledcurves x1 lc rgb '#5e3c99' title 'local KV', \
     -1 with filledcurves x1 lc rgb '#e66101' title 'staging', \
     -1 with filledcurves x1 lc rgb '#b2abd2' title 'lent to peers', \
     -1 with filledcurves x1 lc rgb '#fdb863' title 'borrowed (on peers)', \
     -1 with lines dt 2 lw 1.5 lc rgb 'black' title 'own KV region', \
     -1 with points pt 9 ps 1.1 lc rgb '#d7191c' title 'lent fell (reclaim or return)'

set border
set tics
unset key
set autoscale x
set yrange [0:*]
set xlabel 'time (s)'
set ylabel 'memory (GiB)'
set size pw, ph
do for [i=1:nseries] {
  set origin ((i - 1) % cols) * pw, 1.0 - head - ((i - 1) / cols + 1) * ph
  set title value(sprintf('series%d', i))
  plot data index (i-1) using 1:($2+$3+$4+$5) with filledcurves x1 lc rgb '#fdb863', \
       '' index (i-1) using 1:($2+$3+$4) with filledcurves x1 lc rgb '#b2abd2', \
       '' index (i-1) using 1:($2+$3) with filledcurves x1 lc rgb '#e66101', \
       '' index (i-1) using 1:2 with filledcurves x1 lc rgb '#5e3c99', \
       '' index (i-1) using 1:6 with lines dt 2 lw 1.5 lc rgb 'black', \
       '' index (i-1) using 1:($7 > 0 ? $2+$3+$4+$5 : 1/0) with points pt 9 ps 1.1 \
         lc rgb '#d7191c'
}
unset multiplot
