# compare-change.gp: each variant's change of the borrower's and the lenders' figures against the
# baseline variant, paired by repeat (the repeats share their seeds across variants): the mean
# change and its 95% interval (Student's t over the repeats), the variants side by side at each
# metric. Data: compare-change.dat (one block per variant: dodged metric index, mean %, low %,
# high %). Variables: figtitle, baseline, repeats, metrictics ("name" index, ...), nseries,
# series1..seriesN (the variants).
load common
set title sprintf("%s\nchange vs %s, paired by repeat: mean of %s repeats, bars the 95%% interval (Student's t)", figtitle, baseline, repeats)
set ylabel sprintf('change vs %s (%%)', baseline)
eval sprintf('set xtics (%s) rotate by 20 right', metrictics)
set xrange [-0.6:*]
set offsets 0, 0.6, 0, 0
set xzeroaxis lt -1 lw 1
set grid ytics noxtics
set key top right
plot for [i=1:nseries] 'compare-change.dat' index (i-1) using 1:2:3:4 with yerrorbars lt i \
     title value(sprintf('series%d', i)), \
     for [i=1:nseries] 'compare-change.dat' index (i-1) using 1:2 with points lt i notitle
