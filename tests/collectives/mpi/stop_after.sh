#!/usr/bin/env bash
# stop_after.sh SECONDS COMMAND [ARGS...]: runs COMMAND and stops it (SIGSTOP) after SECONDS: a
# peer that hangs without dying, which only a timeout can detect.
delay=$1; shift
( sleep "$delay"; kill -STOP $$ ) &
exec "$@"
