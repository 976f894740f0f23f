set terminal svg size 820,460 noenhanced font 'sans,12' background rgb 'white'
set output 'plots-load/rss.svg'
set title 'RssAnon over time (process tree, last pass)'
set grid ytics lc rgb '#dddddd'
set key outside right top
set xlabel 'seconds since start'
set ylabel 'RssAnon (MiB)'
set yrange [0:*]
plot 'plots-load/data/rss-old-q4_k_m.dat' using 1:2 with lines lw 2 title 'old-q4_k_m', 'plots-load/data/rss-new-q4_k_m.dat' using 1:2 with lines lw 2 title 'new-q4_k_m', 'plots-load/data/rss-old-q4_0.dat' using 1:2 with lines lw 2 title 'old-q4_0', 'plots-load/data/rss-new-q4_0.dat' using 1:2 with lines lw 2 title 'new-q4_0'
