#!/usr/bin/env bash
# Submit the job `make package` built in dist/ to a Spark cluster, in client mode.
#
#   make package
#   deploy/submit.sh --master spark://spark-master:7077 -- --config pipeline.toml run
#   deploy/submit.sh --master yarn --conf spark.executor.memory=4g -- --config pipeline.toml run
#   deploy/submit.sh --master yarn --dry-run -- --config pipeline.toml run    # print, don't run
#
# Everything after `--` is the pipeline's own command line (default: run).
#
# Options:
#   --master URL           the cluster (required): spark://host:7077, yarn, k8s://https://...
#   --connector NAME       builtin (add Spark's Kafka connector jars) or python; the default is
#                          the project's, and it must match the settings' kafka.connector
#   --sink FORMAT          delta (add Delta Lake's jars and its two session confs), parquet or
#                          orc; the default is the project's, and it must match sink.format
#   --conf KEY=VALUE       passed to spark-submit; repeatable
#   --dry-run              print the spark-submit command instead of running it
#
# Environment:
#   SPARK_SUBMIT       the spark-submit to run (default: $SPARK_HOME/bin/spark-submit, else the
#                      one on PATH, else .venv's from `make install`)
#   SPARK_KAFKA_JARS   comma-separated connector jars (`{{ cookiecutter.package_name }} connector fetch`
#                      lists them) shipped with --jars; unset, --packages asks Spark's resolver
#   SPARK_DELTA_JARS   the same for Delta Lake's jars (`connector fetch` lists them when
#                      sink.format = "delta"); unset, --packages names the Delta build
#                      for the cluster's Spark line (4.0 or 4.2)
#   SPARK_VERSION      the cluster's Spark version for --packages (default: spark-submit --version)
#
# Ctrl-C or SIGTERM to this script stops the job after the batch in flight commits: the
# signal goes to the Python driver, not to spark-submit's JVM.
#
# Python apps run in client mode on standalone clusters: the driver is this machine. It runs
# the environment archive's Python, unpacked in ./environment here, because the driver plans
# Python data sources with the executors' Python setting. The archive links its interpreter
# by absolute path: every node needs the same Python at the same path.
set -euo pipefail

project=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dist=${DIST_DIR:-$project/dist}
package={{ cookiecutter.package_name }}
connector={{ cookiecutter.kafka_connector }}
sink={{ cookiecutter.sink_format }}
master=""
dry_run=false
confs=()

die() { echo "submit.sh: $*" >&2; exit 2; }

while [ $# -gt 0 ]; do
  case "$1" in
    --master) [ $# -ge 2 ] || die "--master needs a URL"; master=$2; shift 2 ;;
    --master=*) master=${1#*=}; shift ;;
    --connector) [ $# -ge 2 ] || die "--connector needs builtin or python"; connector=$2; shift 2 ;;
    --connector=*) connector=${1#*=}; shift ;;
    --sink) [ $# -ge 2 ] || die "--sink needs delta, parquet or orc"; sink=$2; shift 2 ;;
    --sink=*) sink=${1#*=}; shift ;;
    --conf) [ $# -ge 2 ] || die "--conf needs KEY=VALUE"; confs+=(--conf "$2"); shift 2 ;;
    --conf=*) confs+=(--conf "${1#*=}"); shift ;;
    --dry-run) dry_run=true; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    --) shift; break ;;
    *) die "unknown option $1 (the pipeline's own arguments go after --; see --help)" ;;
  esac
done
[ -n "$master" ] || die "--master is required, e.g. --master spark://spark-master:7077 (see --help)"
case "$connector" in builtin|python) ;; *) die "--connector is builtin or python, not $connector" ;; esac
case "$sink" in delta|parquet|orc) ;; *) die "--sink is delta, parquet or orc, not $sink" ;; esac
if [ $# -gt 0 ]; then arguments=("$@"); else arguments=(run); fi

for artifact in environment.tar.gz main.py; do
  [ -f "$dist/$artifact" ] || die "$dist/$artifact is missing: run \`make package\` first"
done

if [ -n "${SPARK_SUBMIT:-}" ]; then
  submit=$SPARK_SUBMIT
elif [ -n "${SPARK_HOME:-}" ]; then
  submit=$SPARK_HOME/bin/spark-submit
elif command -v spark-submit >/dev/null; then
  submit=$(command -v spark-submit)
else
  submit=$project/.venv/bin/spark-submit
fi
[ -x "$submit" ] || die "no spark-submit at $submit: set SPARK_SUBMIT or SPARK_HOME"
if [ -z "${SPARK_HOME:-}" ] && [ -x "$(dirname "$submit")/python" ]; then
  # pip's spark-submit looks for Spark with the driver's Python, which is the archive's and
  # has no pyspark: tell it where Spark is, asking the Python it was installed with.
  home=$("$(dirname "$submit")/python" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))' 2>/dev/null || true)
  if [ -n "$home" ]; then export SPARK_HOME=$home; fi
fi

spark_version() {
  if [ -z "${version:-}" ]; then
    version=${SPARK_VERSION:-$({ "$submit" --version 2>&1 || true; } | sed -n 's/.*version \([0-9][0-9.]*\)$/\1/p' | head -n 1)}
    [ -n "$version" ] || die "cannot tell the Spark version from $submit --version: set SPARK_VERSION"
  fi
  echo "$version"
}

# spark-submit keeps only the last --jars and the last --packages: each is one list.
jar_list=""
package_list=""
if [ "$connector" = builtin ]; then
  if [ -n "${SPARK_KAFKA_JARS:-}" ]; then
    jar_list=$SPARK_KAFKA_JARS
  else
    version=$(spark_version) || exit 2
    package_list=org.apache.spark:spark-sql-kafka-0-10_2.13:$version
  fi
fi
delta_confs=()
if [ "$sink" = delta ]; then
  if [ -n "${SPARK_DELTA_JARS:-}" ]; then
    jar_list=${jar_list:+$jar_list,}$SPARK_DELTA_JARS
  else
    version=$(spark_version) || exit 2
    # The library's choice for each Spark line: from Delta 4.1 on, a build names the Spark
    # line it runs on, and one built for another line fails at the first write.
    case "$version" in
      4.0.*) delta=io.delta:delta-spark_2.13:4.0.0 ;;
      4.2.*) delta=io.delta:delta-spark_4.2_2.13:4.4.0 ;;
      *) die "no Delta Lake build is known for Spark $version (known: 4.0.x, 4.2.x): set SPARK_DELTA_JARS" ;;
    esac
    package_list=${package_list:+$package_list,}$delta
  fi
  delta_confs=(
    --conf spark.sql.extensions=io.delta.sql.DeltaSparkSessionExtension
    --conf spark.sql.catalog.spark_catalog=org.apache.spark.sql.delta.catalog.DeltaCatalog
  )
fi
jars=()
if [ -n "$jar_list" ]; then jars+=(--jars "$jar_list"); fi
if [ -n "$package_list" ]; then jars+=(--packages "$package_list"); fi

command=(
  "$submit"
  --master "$master"
  --deploy-mode client
  --name "${package//_/-}"
  --archives "$dist/environment.tar.gz#environment"
  --conf spark.pyspark.python=./environment/bin/python
  ${jars[@]+"${jars[@]}"}
  ${delta_confs[@]+"${delta_confs[@]}"}
  ${confs[@]+"${confs[@]}"}
  "$dist/main.py"
  "${arguments[@]}"
)

# The driver runs the archive's Python too (see the top of this file).
driver_env=(PYSPARK_PYTHON=./environment/bin/python PYSPARK_DRIVER_PYTHON=./environment/bin/python)

if $dry_run; then
  printf '%q ' "${driver_env[@]}" "${command[@]}"
  echo
  exit 0
fi

# The driver's copy of the archive, in ./environment, unpacked again when the archive's
# checksum changes: beside it first, then moved in, so a half-unpacked copy is never used.
checksum=$(cksum <"$dist/environment.tar.gz")
stamp=environment/.unpacked-from
if [ -e environment ] && [ ! -f "$stamp" ]; then
  die "$PWD/environment was not unpacked by submit.sh: move it away, or run from another directory"
fi
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$checksum" ]; then
  echo "submit.sh: unpacking $dist/environment.tar.gz into $PWD/environment for the driver" >&2
  staging=$(mktemp -d ./environment.unpacking.XXXXXX)
  tar -xzf "$dist/environment.tar.gz" -C "$staging"
  echo "$checksum" >"$staging/.unpacked-from"
  rm -rf environment
  mv "$staging" environment
fi

# spark-submit runs in a process group of its own (job control), so a Ctrl-C here reaches
# only this script, which passes it, like SIGTERM, to the Python driver: the driver lets the
# batch in flight commit, where spark-submit's JVM would stop the SparkContext at once.
# The traps come first: a signal between the start and a later trap would end this script
# and leave the job running without it.
submitted=""
pending=""
forward() {
  if [ -z "$submitted" ]; then pending=$1; return; fi
  # The driver is the JVM's child running main.py; before it has started, the JVM itself.
  local driver
  driver=$(pgrep -P "$submitted" -f "$dist/main.py" 2>/dev/null | head -n 1 || true)
  kill "-$1" "${driver:-$submitted}" 2>/dev/null || true
}
trap 'forward TERM' TERM
trap 'forward INT' INT
set -m
env "${driver_env[@]}" "${command[@]}" &
submitted=$!
if [ -n "$pending" ]; then forward "$pending"; fi
while :; do
  if wait "$submitted"; then status=0; else status=$?; fi
  # wait also returns when a signal arrives: go on waiting while spark-submit lives.
  kill -0 "$submitted" 2>/dev/null || break
done
exit "$status"
