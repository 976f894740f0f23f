set terminal svg size 820,460 noenhanced font 'sans,12' background rgb 'white'
set output 'bench/results/2026-12-06-moe-vs-ik/serve-plots/serve-c1-ttft.svg'
set title 'time to first token at 1 streams (CDF)'
set grid ytics lc rgb '#dddddd'
set key outside right top
set xlabel 'TTFT (ms)'
set ylabel 'fraction of samples'
set yrange [0:1]
plot 'bench/results/2026-12-06-moe-vs-ik/serve-plots/data/serve-c1-ttft-edge-serve.dat' using 1:2 with steps lw 2 title 'edge-serve', 'bench/results/2026-12-06-moe-vs-ik/serve-plots/data/serve-c1-ttft-ik-llama-server.dat' using 1:2 with steps lw 2 title 'ik-llama-server'
