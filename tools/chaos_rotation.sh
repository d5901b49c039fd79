#!/bin/bash
# chaos_rotation.sh [GPULOG] [BROKERS] - an independent-style chaos run of collect (not part of make test:
# it takes ~90 s and stops the broker it is given; KAFKA_STOP / KAFKA_START override how). Reproduces
# the figures of the rotation-chain fix: writer 800 dmon -o DT lines/s for 80 s, rename rotation every 10 s and one copytruncate,
# collector SIGKILLed 5 times and restarted, broker stopped 15 s; compare every line with the topic.
G=${1:-$PWD/build/gpulog}; B=${2:-${KAFKA_BROKERS:-127.0.0.1:19092}}; D=$(mktemp -d); T=chaos-$$-$(date +%s)
KSTOP=${KAFKA_STOP:-scripts/services.sh stop-kafka}; KSTART=${KAFKA_START:-scripts/services.sh start-kafka}
cat > $D/w.py <<'PY'
import os, shutil, sys, time, datetime
path=sys.argv[1]; N=int(sys.argv[2]); rate=800
HDR=("#Date       Time        gpu   pwr gtemp mtemp    sm   mem   enc   dec   jpg   ofa  mclk  pclk    fb  bar1\n"
     "#YYYYMMDD   HH:MM:SS    Idx     W     C     C     %     %     %     %     %     %   MHz   MHz    MB    MB\n")
def emit(t):
    with open(path,"a") as f:
        if f.tell()==0: f.write(HDR)
        f.write(t)
t0=time.time(); i=0; last=t0; k=0
while i<N:
    now=datetime.datetime.utcnow()
    rows="".join("%s %s %5d %5d %5d %5d %5d %5d %5d %5d %5d %5d %5d %5d %7d %5d\n"%(now.strftime("%Y%m%d"),now.strftime("%H:%M:%S"),j%8,200,60,50,90,40,0,0,0,0,1593,1980,j,5) for j in range(i,i+40))
    emit(rows); i+=40
    if time.time()-last>=10:
        last=time.time(); k+=1
        for n in range(9,0,-1):
            if os.path.exists("%s.%d"%(path,n)): os.rename("%s.%d"%(path,n),"%s.%d"%(path,n+1))
        if k==4: shutil.copyfile(path,path+".1"); os.truncate(path,0)
        else: os.rename(path,path+".1")
    d=t0+i/rate-time.time()
    if d>0: time.sleep(d)
PY
N=64000
python3 $D/w.py $D/dmon.log $N & W=$!
start() { $G collect --host c1 --state-dir $D/st --file $D/dmon.log --brokers $B --topic $T --stats-interval 0 2>>$D/c.err & C=$!; }
start
for s in 7 16 31 47 60; do
  while [ $(( $(date +%s) - ${T0:=$(date +%s)} )) -lt $s ]; do sleep 0.5; done
  kill -9 $C; wait $C 2>/dev/null; sleep 2; start
  if [ $s = 16 ]; then $KSTOP >/dev/null 2>&1; sleep 15; $KSTART >/dev/null 2>&1; fi
done
wait $W
sleep 5; kill -TERM $C; wait $C   # the daemon catches up, then stops cleanly
$G collect --once --host c1 --state-dir $D/st --file $D/dmon.log --brokers $B --topic $T --stats-interval 0 2>>$D/c.err; echo "final --once rc=$?"
timeout 120 kcat -b $B -C -t $T -e -q -f '%s\n' > $D/k.json
python3 - $D/k.json $N <<'PY'
import json,sys,collections
ids=collections.defaultdict(set); tot=0
for l in open(sys.argv[1]):
    e=json.loads(l)
    if "gpu.memory.framebuffer.used_size" not in e: continue
    tot+=1; ids[e["gpu.memory.framebuffer.used_size"]].add(e["event.id"])
N=int(sys.argv[2]); lost=[i for i in range(N) if i not in ids]
print("written=%d delivered=%d lost=%d duplicates=%d multi_id=%d phantoms=%d"%(N,len(ids),len(lost),tot-len(ids),sum(1 for s in ids.values() if len(s)>1),sum(1 for i in ids if i>=N)))
PY
echo "generation switches: $(grep -c "next generation" $D/c.err), losses reported: $(grep -c source-data-lost $D/c.err), files: $(ls $D | grep -c dmon.log)"; rm -rf "$D"
