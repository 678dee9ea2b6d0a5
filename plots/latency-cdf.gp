# latency-cdf.gp: CDFs of time to first token (log scale) and time per
# output token, one line per tenant, from a run's requests.csv. Data
# (ttft-cdf.dat, tpot-cdf.dat): one block per tenant, rows: value (ms),
# fraction of the tenant's finished requests at or below it. Variables:
# figtitle, nseries, series1..seriesN (tenants), ntpot (requests with a
# TPOT: 0 when every request had one output token).
load common
# past 12 tenants a legend hides the curves and its colours repeat: none, and the title says how
# to pick tenants (ema-sim plot DIR --tenant A,B)
many = (nseries > 12) ? sprintf(" (%d tenants, no legend: --tenant NAME,... picks some)", nseries) : ""
if (ntpot > 0) {
  set multiplot layout 1, 2 title sprintf("%s\nlatency CDFs per tenant%s", figtitle, many)
} else {
  set title sprintf("%s\nTTFT CDF per tenant%s", figtitle, many)
}
set key bottom right
if (nseries > 12) { unset key }
set autoscale xfix                # the axis ends where the data do
set ylabel 'fraction of requests'
set yrange [0:1.02]
set xlabel 'time to first token (ms, log scale)'
set logscale x
set format x '%.0f'
plot for [i=1:nseries] 'ttft-cdf.dat' index (i-1) using 1:2 with steps lt i \
     title value(sprintf('series%d', i))
if (ntpot > 0) {
  unset logscale x
  set format x '%g'
  set xlabel 'time per output token (ms)'
  set xrange [0:*]
  plot for [i=1:nseries] 'tpot-cdf.dat' index (i-1) using 1:2 with steps lt i \
       title value(sprintf('series%d', i))
  unset multiplot
}
