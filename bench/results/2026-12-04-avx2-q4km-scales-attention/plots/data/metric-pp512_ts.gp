set terminal svg size 820,460 noenhanced font 'sans,12' background rgb 'white'
set output 'plots/metric-pp512_ts.svg'
set title 'pp512_ts (higher is better; band ±11.7%)'
set grid ytics lc rgb '#dddddd'
set key outside right top
set xrange [-0.6:3.6]
set yrange [0:*]
set ylabel 'pp512_ts'
set xtics rotate by -20
plot 'plots/data/metric-pp512_ts.dat' using 1:2:3:4:xtic(5) with yerrorbars pt 7 ps 1.4 lw 2 lc rgb '#1f77b4' title 'median, min-max', 'plots/data/metric-pp512_ts-passes.dat' using 1:2 with points pt 6 ps 1 lc rgb '#ff7f0e' title 'passes'
