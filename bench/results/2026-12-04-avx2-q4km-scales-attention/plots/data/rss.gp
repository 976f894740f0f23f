set terminal svg size 820,460 noenhanced font 'sans,12' background rgb 'white'
set output 'plots/rss.svg'
set title 'RssAnon over time (process tree, last pass)'
set grid ytics lc rgb '#dddddd'
set key outside right top
set xlabel 'seconds since start'
set ylabel 'RssAnon (MiB)'
set yrange [0:*]
plot 'plots/data/rss-avx2-llama-q4_k_m-pp.dat' using 1:2 with lines lw 2 title 'avx2-llama-q4_k_m-pp', 'plots/data/rss-avx2-ik-q4_k_m-pp.dat' using 1:2 with lines lw 2 title 'avx2-ik-q4_k_m-pp', 'plots/data/rss-avx2-edge-q4_k_m-pp.dat' using 1:2 with lines lw 2 title 'avx2-edge-q4_k_m-pp', 'plots/data/rss-avx2-edge-old-q4_k_m-pp.dat' using 1:2 with lines lw 2 title 'avx2-edge-old-q4_k_m-pp'
