set terminal svg size 820,460 noenhanced font 'sans,12' background rgb 'white'
set output 'plots-load/metric-plan.n_layer.svg'
set title 'plan.n_layer (higher is better; band ±0.0%)'
set grid ytics lc rgb '#dddddd'
set key outside right top
set xrange [-0.6:1.6]
set yrange [0:*]
set ylabel 'plan.n_layer'
set xtics rotate by -20
plot 'plots-load/data/metric-plan.n_layer.dat' using 1:2:3:4:xtic(5) with yerrorbars pt 7 ps 1.4 lw 2 lc rgb '#1f77b4' title 'median, min-max', 'plots-load/data/metric-plan.n_layer-passes.dat' using 1:2 with points pt 6 ps 1 lc rgb '#ff7f0e' title 'passes'
