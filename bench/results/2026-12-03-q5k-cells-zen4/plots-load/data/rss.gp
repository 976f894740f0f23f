set terminal svg size 820,460 noenhanced font 'sans,12' background rgb 'white'
set output 'plots-load/rss.svg'
set title 'RssAnon over time (process tree, last pass)'
set grid ytics lc rgb '#dddddd'
set key outside right top
set xlabel 'seconds since start'
set ylabel 'RssAnon (MiB)'
set yrange [0:*]
plot 'plots-load/data/rss-q5_k_m-w6.dat' using 1:2 with lines lw 2 title 'q5_k_m-w6', 'plots-load/data/rss-q5_k_m-q5k.dat' using 1:2 with lines lw 2 title 'q5_k_m-q5k'
