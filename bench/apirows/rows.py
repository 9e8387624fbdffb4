#!/usr/bin/env python3
# rows.py N: the two 12 MP rows of docs/benchmarks.md's API table in one run. Each of N rounds
# (after one warm-up) runs, in an order that alternates, bench/convbench (the converter alone,
# a fresh process), $W/cs-base and $W/cs-new (two warm servers started by serve.sh, e.g. main
# and a branch) and the native tool; per conversion it reports the median wall time, the
# client's CPU (wait4's rusage, median), the server's CPU (the server and its worker
# processes, /proc utime+stime, mean over the rounds: /proc counts in 10 ms ticks) and the
# server process's own CPU without its workers, and the ratios to convbench and to the native
# tool. The API conversions run with --no-cache: the same input again would be answered by the
# conversion cache (docs/cache.md) and convert nothing. Inputs in $W/in (big.jpg, big.tif and big.png as in docs/benchmarks.md), convbench in $W/bin.
#
#	W=/tmp/w bench/apirows/serve.sh base /tmp/w/convsvc-main 18310
#	W=/tmp/w bench/apirows/serve.sh new /tmp/w/convsvc 18320
#	W=/tmp/w python3 bench/apirows/rows.py 12
#	W=/tmp/w ROWS=tiff python3 bench/apirows/rows.py 6    # the TIFF row alone
import os, sys, time, subprocess, statistics
W=os.environ['W']; os.chdir(W)
N=int(sys.argv[1]) if len(sys.argv)>1 else 10
TCK=os.sysconf('SC_CLK_TCK')
def tree_cpu(pid, children=True):
    tot=0.0
    pids=[pid]
    for p in os.listdir('/proc'):
        if p.isdigit():
            try:
                st=open(f'/proc/{p}/stat').read().rsplit(')',1)[1].split()
                if int(st[1])==pid: pids.append(int(p))
            except Exception: pass
    if not children: pids=[pid]
    for p in pids:
        try:
            st=open(f'/proc/{p}/stat').read().rsplit(')',1)[1].split()
            tot+= (int(st[11])+int(st[12])+int(st[13])+int(st[14]))/TCK
        except Exception: pass
    return tot
def run(cmd):
    t0=time.monotonic()
    p=subprocess.Popen(cmd, shell=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _,status,ru=os.wait4(p.pid,0)
    if status!=0: raise SystemExit(f'{cmd}: status {status}')
    return time.monotonic()-t0, ru.ru_utime+ru.ru_stime
rows={
 'row2 12MP JPEG->800px PNG': ('bin/convbench -width 800 jpeg png in/big.jpg o2.png','in/big.jpg --to png --width 800 --no-cache -o o2X.png','vipsthumbnail in/big.jpg -s 800 -o '+W+'/o2v.png'),
 'row1 12MP TIFF->JPEG q85': ('bin/convbench -q 85 tiff jpeg in/big.tif o1.jpg','in/big.tif --to jpeg --quality 85 --no-cache -o o1X.jpg','vips copy in/big.tif '+W+'/o1v.jpg[Q=85]'),
 'avif 12MP PNG->AVIF q60 s10': ('bin/convbench png avif in/big.png o3.avif','in/big.png --to avif --no-cache -o o3X.avif','avifenc -s 10 -y 420 --min 25 --max 25 -j 1 in/big.png '+W+'/o3v.avif'),
}
# ROWS=tiff (or jpeg): only the rows whose name holds it, case-insensitive.
if os.environ.get('ROWS'):
    rows={k:v for k,v in rows.items() if os.environ['ROWS'].lower() in k.lower()}
pids={s:int(open(f'{W}/srv/{s}.pid').read()) for s in ('base','new')}
for name,(cb,api,nat) in rows.items():
    res={k:[] for k in ('convbench','api-base','api-new','native')}
    ownc={}
    l0=os.getloadavg()[0]
    for i in range(N+1):
        order=['convbench','api-base','api-new','native']
        if i%2: order.reverse()
        for k in order:
            if k=='convbench': w,c=run(cb); s=0
            elif k=='native': w,c=run(nat); s=0
            else:
                srv=k.split('-')[1]
                before=tree_cpu(pids[srv]); b0=tree_cpu(pids[srv],False); w,c=run(f'./cs-{srv} '+api.replace('X',srv)); time.sleep(0.05); s=tree_cpu(pids[srv])-before; own=tree_cpu(pids[srv],False)-b0
                ownc.setdefault(k,[]).append(own)
            if i>0: res[k].append((w,c,s))
    l1=os.getloadavg()[0]
    print(f'\n{name}: {N} each, interleaved, load {l0:.1f} -> {l1:.1f}')
    print('| path | wall median | client CPU (median) | server CPU (mean) | CPU | wall / convbench | CPU / convbench | wall / native | CPU / native |')
    print('|---|---|---|---|---|---|---|---|---|')
    med=lambda k,j: statistics.median(x[j] for x in res[k])
    srvcpu=lambda k: sum(x[2] for x in res[k])/len(res[k])  # /proc ticks are 10 ms: the mean over N
    cpu=lambda k: statistics.median(x[1] for x in res[k])+srvcpu(k)
    for k in ('api-base','api-new'):
        print(f'{k}: the server process alone (not its workers): {sum(ownc[k][1:])/len(ownc[k][1:])*1000:.0f} ms CPU per conversion (mean)')
    for k in res:
        print(f'| {k} | {med(k,0)*1000:.0f} ms | {med(k,1)*1000:.0f} ms | {srvcpu(k)*1000:.0f} ms | {cpu(k)*1000:.0f} ms | {med(k,0)/med("convbench",0):.2f} | {cpu(k)/cpu("convbench"):.2f} | {med(k,0)/med("native",0):.2f} | {cpu(k)/cpu("native"):.2f} |')
