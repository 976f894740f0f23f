set terminal svg size 820,460 noenhanced font 'sans,12' background rgb 'white'
set output 'bench/results/2026-12-01-grid-w6-quantize-memory/plots-load-peak/rss.svg'
set title 'RssAnon over time (process tree, last pass)'
set grid ytics lc rgb '#dddddd'
set key outside right top
set xlabel 'seconds since start'
set ylabel 'RssAnon (MiB)'
set yrange [0:*]
plot 'bench/results/2026-12-01-grid-w6-quantize-memory/plots-load-peak/data/rss-llama-cli.dat' using 1:2 with lines lw 2 title 'llama-cli', 'bench/results/2026-12-01-grid-w6-quantize-memory/plots-load-peak/data/rss-edge-bench-init.dat' using 1:2 with lines lw 2 title 'edge-bench-init'
