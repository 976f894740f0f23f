set terminal svg size 820,460 noenhanced font 'sans,12' background rgb 'white'
set output 'bench/results/2026-12-01-grid-vs-llamacpp-ik/plots-serve/rss.svg'
set title 'RssAnon over time (process tree, last pass)'
set grid ytics lc rgb '#dddddd'
set key outside right top
set xlabel 'seconds since start'
set ylabel 'RssAnon (MiB)'
set yrange [0:*]
plot 'bench/results/2026-12-01-grid-vs-llamacpp-ik/plots-serve/data/rss-edge-serve.dat' using 1:2 with lines lw 2 title 'edge-serve', 'bench/results/2026-12-01-grid-vs-llamacpp-ik/plots-serve/data/rss-llama-server.dat' using 1:2 with lines lw 2 title 'llama-server'
