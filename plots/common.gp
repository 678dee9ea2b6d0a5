# common.gp: what every figure shares; each script here loads it first.
# Variables (set by plots.gp, which ema-sim plot writes next to the figures):
#   fmt     'png' or 'svg'
#   name    the figure's file name without its extension
#   width, height   its size in pixels
# Text is not "enhanced" (an underscore in a tenant or path name stays an
# underscore). Colours: the ColorBrewer Dark2 set, one per line type.
#   paper   1: the paper preset (ema-sim plot --paper): a column wide, 7 pt type, PDF (where the
#           default draws PNG) and SVG; the default's sizes keep their proportions
ext = fmt
if (exists('paper') && paper) {
  pw = 3.4; ph = 3.4 * height / width     # inches: one column of a two-column paper
  if (fmt eq 'svg') {
    set terminal svg size pw * 96, ph * 96 font 'Sans,7' noenhanced background rgb 'white'
  } else {
    set terminal pdfcairo size pw, ph font 'Sans,7' noenhanced linewidth 0.75
    ext = 'pdf'
  }
} else {
  if (fmt eq 'svg') {
    set terminal svg size width, height font 'Sans,12' noenhanced dynamic background rgb 'white'
  } else {
    set terminal pngcairo size width, height font 'Sans,10' noenhanced background rgb 'white'
  }
}
set output name.'.'.ext
set grid lc rgb '#dddddd' lt 1
set border lc rgb '#444444'
set key noautotitle box lc rgb '#bbbbbb' opaque samplen 3
set linetype 1 lc rgb '#1b9e77' lw 2 pt 7 ps 0.9
set linetype 2 lc rgb '#d95f02' lw 2 pt 5 ps 0.9
set linetype 3 lc rgb '#7570b3' lw 2 pt 9 ps 1.0
set linetype 4 lc rgb '#e7298a' lw 2 pt 11 ps 1.0
set linetype 5 lc rgb '#66a61e' lw 2 pt 13 ps 1.0
set linetype 6 lc rgb '#e6ab02' lw 2 pt 15 ps 1.0
set linetype 7 lc rgb '#a6761d' lw 2 pt 3 ps 1.0
set linetype 8 lc rgb '#666666' lw 2 pt 1 ps 1.0
set linetype cycle 8
# An empty panel with the text NOTE in its middle, for a plot of no points (gnuplot cannot
# place an axis on none): note = '...'; eval empty_panel. Afterwards both axes autoscale (without
# fixmin or fixmax) and the key is on, bottom right.
empty_panel = "set xrange [1:10]; set yrange [0:1]; unset xtics; unset ytics; unset key; " . \
              "set label 99 note at graph 0.5, 0.5 center; plot -1 notitle; unset label 99; " . \
              "set autoscale x; set autoscale y; set xtics; set ytics; set key bottom right"
