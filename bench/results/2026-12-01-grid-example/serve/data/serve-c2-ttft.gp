set terminal svg size 820,460 noenhanced font 'sans,12' background rgb 'white'
set output 'bench/results/2026-12-01-grid-example/serve/serve-c2-ttft.svg'
set title 'time to first token at 2 streams (CDF)'
set grid ytics lc rgb '#dddddd'
set key outside right top
set xlabel 'TTFT (ms)'
set ylabel 'fraction of samples'
set yrange [0:1]
plot 'bench/results/2026-12-01-grid-example/serve/data/serve-c2-ttft-same-prompt.dat' using 1:2 with steps lw 2 title 'same-prompt', 'bench/results/2026-12-01-grid-example/serve/data/serve-c2-ttft-unique-prompts.dat' using 1:2 with steps lw 2 title 'unique-prompts'
