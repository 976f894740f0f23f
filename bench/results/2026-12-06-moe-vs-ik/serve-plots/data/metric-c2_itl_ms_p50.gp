set terminal svg size 820,460 noenhanced font 'sans,12' background rgb 'white'
set output 'bench/results/2026-12-06-moe-vs-ik/serve-plots/metric-c2_itl_ms_p50.svg'
set title 'c2_itl_ms_p50 (lower is better; band ±9.5%)'
set grid ytics lc rgb '#dddddd'
set key outside right top
set xrange [-0.6:1.6]
set yrange [0:*]
set ylabel 'c2_itl_ms_p50'
set xtics rotate by -20
plot 'bench/results/2026-12-06-moe-vs-ik/serve-plots/data/metric-c2_itl_ms_p50.dat' using 1:2:3:4:xtic(5) with yerrorbars pt 7 ps 1.4 lw 2 lc rgb '#1f77b4' title 'median, min-max', 'bench/results/2026-12-06-moe-vs-ik/serve-plots/data/metric-c2_itl_ms_p50-passes.dat' using 1:2 with points pt 6 ps 1 lc rgb '#ff7f0e' title 'passes'
