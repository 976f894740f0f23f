set terminal svg size 820,460 noenhanced font 'sans,12' background rgb 'white'
set output 'bench/results/2026-12-06-moe-vs-ik/serve-plots/rss.svg'
set title 'RssAnon over time (process tree, last pass)'
set grid ytics lc rgb '#dddddd'
set key outside right top
set xlabel 'seconds since start'
set ylabel 'RssAnon (MiB)'
set yrange [0:*]
plot 'bench/results/2026-12-06-moe-vs-ik/serve-plots/data/rss-edge-serve.dat' using 1:2 with lines lw 2 title 'edge-serve', 'bench/results/2026-12-06-moe-vs-ik/serve-plots/data/rss-ik-llama-server.dat' using 1:2 with lines lw 2 title 'ik-llama-server'
