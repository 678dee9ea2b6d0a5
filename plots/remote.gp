# remote.gp: what the links carry, per GPU over time. The simulator keeps no
# per-link counters, so this shows instead the KV each GPU holds on peers
# (GiB) and the rate its steps read it over the links, estimated as remote
# KV / step time (a decode step reads all of a sequence's KV once). Data:
# memory.dat (columns 8 and 9; see memory.gp). Variables: figtitle,
# nseries, series1..seriesN, tenant_series (the numbers of the series of GPUs
# with a tenant, "1 3": a GPU without one holds no remote KV and is left out).
load common
set multiplot layout 2, 1 title sprintf("%s\nremote KV per GPU (the links' load; per-link use is not recorded)", figtitle)
set xlabel 'time (s)'
set key top left
set yrange [0:*]
set ylabel 'KV on peers (GiB)'
plot for [s in tenant_series] data index (int(s)-1) using 1:8 with lines lt int(s) lw 1.2 title value('series'.s)
set ylabel 'remote KV read (GB/s)'
set title 'estimated: remote KV / step time'
plot for [s in tenant_series] data index (int(s)-1) using 1:9 with lines lt int(s) lw 1.2 title value('series'.s)
unset multiplot
