set terminal svg size 820,460 noenhanced font 'sans,12' background rgb 'white'
set output 'bench/results/2026-12-01-grid-w6-quantize-memory/plots-q4_k_m/rss.svg'
set title 'RssAnon over time (process tree, last pass)'
set grid ytics lc rgb '#dddddd'
set key outside right top
set xlabel 'seconds since start'
set ylabel 'RssAnon (MiB)'
set yrange [0:*]
plot 'bench/results/2026-12-01-grid-w6-quantize-memory/plots-q4_k_m/data/rss-llama-q4_k_m.dat' using 1:2 with lines lw 2 title 'llama-q4_k_m', 'bench/results/2026-12-01-grid-w6-quantize-memory/plots-q4_k_m/data/rss-ik-q4_k_m-rtr.dat' using 1:2 with lines lw 2 title 'ik-q4_k_m-rtr', 'bench/results/2026-12-01-grid-w6-quantize-memory/plots-q4_k_m/data/rss-edge-q4_k_m-repacked.dat' using 1:2 with lines lw 2 title 'edge-q4_k_m-repacked'
