#!/bin/bash
# serve.sh NAME BIN PORT: starts a warm `BIN serve` (bbolt, local blobs, 2 workers, the
# default --isolation process) on 127.0.0.1:PORT (objects on PORT+1) with its data in
# $W/srv/NAME, makes 20 keys of one account in $W/keys-NAME (each conversion takes a random
# one, so no key reaches 120 writes a minute), and writes $W/cs-NAME, which runs
# `BIN convert --server ... --key K --force ARGS` as the API rows' client. Stop the server with
# kill $(cat $W/srv/NAME.pid).
set -e
W=${W:?set W to a scratch directory}; NAME=$1; BIN=$2; P=$3; B=$((P+1))
rm -rf $W/srv/$NAME; mkdir -p $W/srv/$NAME
CONVSVC_WASM_CACHE_DIR=$W/wasmcache $BIN serve --data $W/srv/$NAME --listen 127.0.0.1:$P --blob-listen 127.0.0.1:$B --log-level warn --workers 2 > $W/srv/$NAME.log 2>&1 &
echo $! > $W/srv/$NAME.pid
for i in $(seq 50); do curl -sf http://127.0.0.1:$P/readyz >/dev/null && break; sleep 0.2; done
ACCT=$($BIN admin --data $W/srv/$NAME --server http://127.0.0.1:$P accounts create --name bench --spend-cap-cents 100000000 2>&1 | grep -o 'acct_[A-Za-z0-9]*' | head -1)
: > $W/keys-$NAME
for i in $(seq 20); do $BIN admin --data $W/srv/$NAME --server http://127.0.0.1:$P keys create $ACCT 2>&1 | grep '"key"' | grep -o 'cs_live_[A-Za-z0-9]*' >> $W/keys-$NAME; done
cat > $W/cs-$NAME <<EOS
#!/bin/bash
KEY=\$(shuf -n1 $W/keys-$NAME)
exec $BIN convert --server http://127.0.0.1:$P --key \$KEY --force "\$@"
EOS
chmod +x $W/cs-$NAME
wc -l $W/keys-$NAME
