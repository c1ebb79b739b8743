#!/usr/bin/env bash
# One pace benchmark sent from N pods of a Kubernetes Indexed Job, merged
# into one report. See README.md in this directory.
#
#   run.sh --image REGISTRY/pace:TAG --shards 4 -- -t2 -c200 -d60s -R40000 http://app:8080/
#
# Sets the start time a lead time ahead, renders job.yaml, creates the Job,
# waits for it, collects each pod's JSON report into OUT/shard-I.json and
# runs `pace merge` on them. Needs kubectl (with access to the cluster) and,
# for the merge, pace on this machine.
set -euo pipefail
export LC_ALL=C

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
template="$here/job.yaml"

usage() {
    cat <<'EOF'
Usage: run.sh [OPTIONS] -- PACE_ARGS...

Runs `pace PACE_ARGS --shard I/N --start-at T --json` in pod I of an Indexed
Job of N pods, then `pace merge` on their reports.

Options (environment variable in brackets):
  --image IMAGE      container image with pace as its entrypoint [PACE_IMAGE] (required)
  --shards N         pods, one shard each [PACE_SHARDS] (default 2)
  --lead SECONDS     start the plan this long after now, to cover image pull
                     and pod scheduling [PACE_LEAD] (default 60)
  --namespace NS     namespace of the Job [PACE_NAMESPACE] (default: kubectl's)
  --out DIR          where the results go [PACE_OUT] (default pace-results/NAME)
  --name NAME        the Job's name (default pace-YYYYMMDD-HHMMSS)
  --cpu CPU          CPU request and limit of each pod (default 2, or what
                     fits the largest node's allocatable CPU for the pods
                     it will hold; match -t)
  --memory MEM       memory request and limit of each pod (default 512Mi,
                     or what fits as for --cpu)
  --host-network     the pods use their node's network (hostNetwork), to
                     reach servers only the nodes reach, such as 127.0.0.1
                     of a one-node cluster (local-cluster.sh); with
                     --metrics pod I listens on port 946I (at most 10 shards)
  --spread MODE      soft: prefer one pod per node; hard: require an even
                     spread over nodes (default soft)
  --file FILE        make FILE available to pace in the pod's working
                     directory under its own name (-s script.lua,
                     --targets t.txt, --body-file b.json); repeatable
  --timeout SECONDS  give up waiting this long after the start time
                     (default 3600)
  --keep             do not delete the Job (and its pods) at the end
  --metrics          each pod serves its live figures for Prometheus on port
                     9464 (pace --metrics :9464), annotated prometheus.io/scrape
  --metrics-linger SECONDS
                     with --metrics, each pod serves its final figures this
                     long after its report, for a last scrape: at least the
                     scrape interval (default 30)
  --pace PATH        the pace that merges the reports [PACE_BIN] (default: pace on the PATH)
  --no-merge         only collect OUT/shard-I.json
  --html FILE        pass --html FILE to pace merge
  --slo LIST         pass --slo LIST to pace merge (judged on the merged result)
  --merge-arg ARG    pass ARG to pace merge (e.g. -U, -e); repeatable
  --render-only      print the Job manifest and exit (no kubectl needed)
  -h, --help         print this help

Exit code: 0 when the run and the merge succeeded, 1 for a wrong command
line or a missing tool, 2 when the Job failed or timed out or a result is
missing, otherwise pace merge's (4: an --slo objective failed).
EOF
}

say() { printf 'run.sh: %s\n' "$*" >&2; }
die() {
    say "$*"
    exit 1
}

# ----- options -------------------------------------------------------------------

image=${PACE_IMAGE:-}
shards=${PACE_SHARDS:-2}
lead=${PACE_LEAD:-60}
namespace=${PACE_NAMESPACE:-}
out=${PACE_OUT:-}
pace=${PACE_BIN:-pace}
name=
cpu=
memory=
spread=soft
timeout=3600
keep=false
merge=true
render_only=false
metrics=false
host_network=false
metrics_linger=30
files=()
merge_args=()
pace_args=()

# The value of option $1, given as `--opt VALUE` ($2) or `--opt=VALUE`.
need_value() {
    if [[ $# -lt 2 ]]; then
        die "$1 needs a value (see --help)"
    fi
}

while [[ $# -gt 0 ]]; do
    opt=$1
    shift
    case $opt in
        --*=*)
            set -- "${opt#*=}" "$@"
            opt=${opt%%=*}
            ;;
    esac
    case $opt in
        --image | --shards | --lead | --namespace | --out | --name | --cpu | --memory | \
            --spread | --file | --timeout | --pace | --html | --slo | --merge-arg | \
            --metrics-linger)
            need_value "$opt" "$@"
            value=$1
            shift
            case $opt in
                --image) image=$value ;;
                --shards) shards=$value ;;
                --lead) lead=$value ;;
                --namespace) namespace=$value ;;
                --out) out=$value ;;
                --name) name=$value ;;
                --cpu) cpu=$value ;;
                --memory) memory=$value ;;
                --spread) spread=$value ;;
                --file) files+=("$value") ;;
                --timeout) timeout=$value ;;
                --pace) pace=$value ;;
                --html) merge_args+=(--html "$value") ;;
                --slo) merge_args+=(--slo "$value") ;;
                --merge-arg) merge_args+=("$value") ;;
                --metrics-linger) metrics_linger=$value ;;
            esac
            ;;
        --keep) keep=true ;;
        --no-merge) merge=false ;;
        --metrics) metrics=true ;;
        --host-network) host_network=true ;;
        --render-only) render_only=true ;;
        -h | --help)
            usage
            exit 0
            ;;
        --)
            pace_args=("$@")
            break
            ;;
        *) die "unknown option '$opt' (the pace arguments come after --; see --help)" ;;
    esac
done

# ----- checks --------------------------------------------------------------------

is_count() { [[ $1 =~ ^[1-9][0-9]*$ ]]; }

[[ -n $image ]] || die "no image: give --image or PACE_IMAGE (README.md: build and push it)"
[[ $image =~ ^[A-Za-z0-9][A-Za-z0-9._/:@-]*$ ]] || die "--image '$image' is not an image reference"
is_count "$shards" || die "--shards '$shards' is not a whole number of at least 1"
lead=${lead%s}
is_count "$lead" || die "--lead '$lead' is not a whole number of seconds of at least 1"
timeout=${timeout%s}
is_count "$timeout" || die "--timeout '$timeout' is not a whole number of seconds of at least 1"
[[ -z $cpu || $cpu =~ ^([0-9]+(\.[0-9]+)?|[0-9]+m)$ ]] ||
    die "--cpu '$cpu' is not a CPU quantity (2, 1.5, 500m)"
[[ -z $memory || $memory =~ ^[0-9]+([KMGT]i?)?$ ]] ||
    die "--memory '$memory' is not a memory quantity (512Mi, 2Gi)"
case $spread in
    soft) when_unsatisfiable=ScheduleAnyway ;;
    hard) when_unsatisfiable=DoNotSchedule ;;
    *) die "--spread '$spread': expected soft or hard" ;;
esac
if [[ -z $name ]]; then
    name="pace-$(date -u +%Y%m%d-%H%M%S)"
fi
# A DNS label, short enough for the pods' names and the "-files" ConfigMap.
[[ $name =~ ^[a-z0-9]([a-z0-9-]*[a-z0-9])?$ && ${#name} -le 52 ]] ||
    die "--name '$name': lower-case letters, digits and '-', at most 52 characters"
[[ ${#pace_args[@]} -gt 0 ]] || die "no pace arguments: give them after -- (at least the URL)"
# Options abbreviated as pace allows (--sh, --star, --ou, --sl, --se).
seeded=false
for arg in "${pace_args[@]}"; do
    case $arg in
        --sh* | --star*)
            die "pace argument '$arg': run.sh sets --shard and --start-at itself" ;;
        -o | -o?* | --o | --o=* | --ou*)
            die "pace argument '$arg': the pods' reports leave through stdout; run.sh writes the files" ;;
        --sl*)
            die "pace argument '$arg': give --slo to run.sh, to be judged on the merged result" ;;
        --se | --se=* | --see*) seeded=true ;;
        --) break ;;
    esac
done
# Every shard must draw the same random numbers (Poisson arrivals, a random
# targets order): one seed for all, unless one was given.
metrics_linger=${metrics_linger%s}
[[ $metrics_linger =~ ^[0-9]+$ ]] ||
    die "--metrics-linger '$metrics_linger' is not a whole number of seconds"
# The port job.yaml declares and annotates for Prometheus. On the host
# network the pods of a node share its ports: pod I takes 946I, its index
# appended by Kubernetes ($(JOB_COMPLETION_INDEX), expanded in args only
# when written as it is: K8S_ARGS are rendered unquoted).
k8s_args=()
metrics_port=9464
if $metrics && $host_network; then
    ((shards <= 10)) || die "--metrics with --host-network gives pod I the port 946I: at most 10 shards"
    metrics_port=946
    # shellcheck disable=SC2016 # expanded by Kubernetes, not by bash
    k8s_args=(--metrics ':946$(JOB_COMPLETION_INDEX)')
    pace_args=(--metrics-linger "${metrics_linger}s" "${pace_args[@]}")
elif $metrics; then
    pace_args=(--metrics :9464 --metrics-linger "${metrics_linger}s" "${pace_args[@]}")
fi
if ! $seeded; then
    seed=$(((RANDOM << 15) | RANDOM))
    pace_args=(--seed "$seed" "${pace_args[@]}")
fi
for file in ${files[@]+"${files[@]}"}; do
    [[ -f $file && -r $file ]] || die "--file '$file' is not a readable file"
done

# ----- the manifest ----------------------------------------------------------------

# The start time: whole seconds, UTC, RFC 3339.
start_epoch=$(($(date +%s) + lead))
start_at=$(date -u -d "@$start_epoch" +%Y-%m-%dT%H:%M:%SZ 2>/dev/null ||
    date -u -r "$start_epoch" +%Y-%m-%dT%H:%M:%SZ)

# $1 as a YAML double-quoted string, with each '$' doubled: Kubernetes
# expands $(VAR) in args and turns '$$' back into '$'.
yaml_string() {
    local s=$1 quoted='"' c i
    case $s in
        *[\\\"\$[:cntrl:]]*) ;;
        *)
            printf '"%s"' "$s"
            return
            ;;
    esac
    for ((i = 0; i < ${#s}; i++)); do
        c=${s:i:1}
        case $c in
            \\) quoted+="\\\\" ;;
            \") quoted+='\"' ;;
            \$) quoted+='$$' ;;
            $'\n') quoted+='\n' ;;
            $'\t') quoted+='\t' ;;
            [[:cntrl:]]) quoted+=$(printf '\\x%02x' "'$c") ;;
            *) quoted+=$c ;;
        esac
    done
    printf '%s"' "$quoted"
}

# job.yaml with its placeholders filled in. The values put into lines are
# checked above to hold none of the characters special in a bash
# replacement ('&', '\').
render() {
    local line prefix arg
    while IFS= read -r line || [[ -n $line ]]; do
        case $line in
            *"# not on the host network")
                if $host_network; then continue; fi
                ;;
            *"\${K8S_ARGS}"*)
                prefix=${line%%"\${K8S_ARGS}"*}
                for arg in ${k8s_args[@]+"${k8s_args[@]}"}; do
                    printf '%s"%s"\n' "$prefix" "$arg"
                done
                continue
                ;;
            *"\${PACE_ARGS}"*)
                prefix=${line%%"\${PACE_ARGS}"*}
                for arg in "${pace_args[@]}"; do
                    printf '%s%s\n' "$prefix" "$(yaml_string "$arg")"
                done
                continue
                ;;
        esac
        fill JOB_NAME "$name"
        fill SHARDS "$shards"
        fill START_AT "$start_at"
        fill IMAGE "$image"
        fill CPU "$cpu"
        fill MEMORY "$memory"
        fill SPREAD "$when_unsatisfiable"
        fill METRICS "$metrics"
        fill METRICS_PORT "$metrics_port"
        fill HOST_NETWORK "$host_network"
        fill DEADLINE_S "$((lead + timeout))"
        case $line in
            *"\${"[A-Z]*) die "$template has a placeholder run.sh does not know: $line" ;;
        esac
        printf '%s\n' "$line"
    done <"$template"
}

# In render's line: the placeholder named $1 replaced by $2.
fill() {
    line=${line//"\${$1}"/$2}
}

if $render_only; then
    cpu=${cpu:-2}
    memory=${memory:-512Mi}
    render
    exit 0
fi

# ----- tools -----------------------------------------------------------------------

command -v kubectl >/dev/null || die "kubectl not found: install it and point it at the cluster"
if $merge && ! command -v "$pace" >/dev/null; then
    die "'$pace' not found, needed for pace merge: install pace here (cargo install --path .), give --pace PATH, or --no-merge"
fi

kc() {
    kubectl ${namespace:+--namespace "$namespace"} "$@"
}

# ----- what fits the nodes -----------------------------------------------------

# A CPU quantity (2, 1.5, 500m) in millicores.
millicores() {
    case $1 in
        *m) echo "${1%m}" ;;
        *.*)
            local whole=${1%%.*} fraction=${1#*.}000
            echo $((10#${whole:-0} * 1000 + 10#${fraction:0:3}))
            ;;
        *) echo $(($1 * 1000)) ;;
    esac
}

# A memory quantity (512Mi, 8029384Ki, 2G, 1000000) in bytes.
bytes() {
    local number=${1%%[KMGT]*} unit=${1#"${1%%[KMGT]*}"}
    case $unit in
        Ki) echo $((number << 10)) ;;
        Mi) echo $((number << 20)) ;;
        Gi) echo $((number << 30)) ;;
        Ti) echo $((number << 40)) ;;
        K) echo $((number * 1000)) ;;
        M) echo $((number * 1000000)) ;;
        G) echo $((number * 1000000000)) ;;
        T) echo $((number * 1000000000000)) ;;
        *) echo "$number" ;;
    esac
}

# The pods' CPU and memory: as given, or the defaults (2 CPUs, 512Mi)
# lowered to what the largest node can hold for the pods it will get (the
# shards spread over the nodes); a size given that no node can hold is
# said before anything is created.
fit_to_nodes() {
    local nodes largest_cpu=0 largest_memory=0 node_cpu node_memory count per_node
    nodes=$(kc get nodes -o \
        'jsonpath={range .items[*]}{.status.allocatable.cpu} {.status.allocatable.memory}{"\n"}{end}') ||
        die "kubectl cannot list the nodes: is it pointed at the cluster?"
    count=0
    while read -r node_cpu node_memory; do
        [[ -n $node_cpu ]] || continue
        count=$((count + 1))
        node_cpu=$(millicores "$node_cpu")
        node_memory=$(bytes "$node_memory")
        ((node_cpu > largest_cpu)) && largest_cpu=$node_cpu
        ((node_memory > largest_memory)) && largest_memory=$node_memory
    done <<<"$nodes"
    ((count > 0)) || die "the cluster has no node to run the pods on"
    per_node=$(((shards + count - 1) / count))
    if [[ -z $cpu ]]; then
        # Whole tenths of a CPU, at most 2, at least 100m.
        cpu=$((largest_cpu / per_node / 100 * 100))
        ((cpu > 2000)) && cpu=2000
        ((cpu >= 100)) || die "the largest node has ${largest_cpu}m CPU allocatable: too little for $per_node pods"
        cpu=${cpu}m
        say "--cpu $cpu a pod ($per_node pods on a node of ${largest_cpu}m allocatable)"
    elif (($(millicores "$cpu") > largest_cpu)); then
        die "--cpu $cpu does not fit: the largest node has ${largest_cpu}m CPU allocatable (give a smaller --cpu)"
    fi
    if [[ -z $memory ]]; then
        local mebibytes=$((largest_memory / per_node >> 20))
        ((mebibytes > 512)) && mebibytes=512
        ((mebibytes >= 64)) || die "the largest node has $((largest_memory >> 20))Mi allocatable: too little for $per_node pods"
        memory=${mebibytes}Mi
    elif (($(bytes "$memory") > largest_memory)); then
        die "--memory $memory does not fit: the largest node has $((largest_memory >> 20))Mi allocatable (give a smaller --memory)"
    fi
    # Every shard must run at once: pods that wait for others to end would
    # start after their first request was due, and refuse to run. What the
    # nodes' allocatable CPU and memory hold at most (other pods take more).
    local pod_cpu pod_memory fitting=0 fits
    pod_cpu=$(millicores "$cpu")
    pod_memory=$(bytes "$memory")
    ((pod_cpu > 0)) || die "--cpu $cpu: a pod needs some CPU"
    ((pod_memory > 0)) || die "--memory $memory: a pod needs some memory"
    while read -r node_cpu node_memory; do
        [[ -n $node_cpu ]] || continue
        fits=$(($(millicores "$node_cpu") / pod_cpu))
        (($(bytes "$node_memory") / pod_memory < fits)) && fits=$(($(bytes "$node_memory") / pod_memory))
        fitting=$((fitting + fits))
    done <<<"$nodes"
    ((fitting >= shards)) ||
        die "$shards pods of --cpu $cpu --memory $memory do not fit at once: the nodes' allocatable CPU and memory hold $fitting (give a smaller --cpu or --memory, or fewer --shards)"
}
fit_to_nodes

# ----- run -------------------------------------------------------------------------

out=${out:-pace-results/$name}
mkdir -p "$out"
for ((i = 0; i < shards; i++)); do
    [[ ! -e $out/shard-$i.json ]] || die "$out already holds results (shard-$i.json): give another --out"
done
render >"$out/job.yaml"

# What this run created, deleted at the end (never what was there before:
# a name already taken makes kubectl create fail).
made_files=false
made_job=false
# shellcheck disable=SC2317 # called by the trap
cleanup() {
    if $keep; then
        return
    fi
    if $made_job; then
        kc delete job "$name" --ignore-not-found >/dev/null || say "could not delete job $name"
        say "deleted job $name"
    fi
    if $made_files; then
        kc delete configmap "$name-files" --ignore-not-found >/dev/null ||
            say "could not delete configmap $name-files"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if [[ ${#files[@]} -gt 0 ]]; then
    from_files=()
    for file in "${files[@]}"; do
        from_files+=("--from-file=$file")
    done
    kc create configmap "$name-files" "${from_files[@]}" >/dev/null
    made_files=true
fi
kc create -f "$out/job.yaml" >/dev/null
made_job=true
say "job $name: $shards shards, starting at $start_at (in ${lead}s); manifest in $out/job.yaml"

# The pods' index, name and phase, one pod a line.
pods() {
    kc get pods -l "pace.run=$name" -o \
        'jsonpath={range .items[*]}{.metadata.annotations.batch\.kubernetes\.io/job-completion-index} {.metadata.name} {.status.phase}{"\n"}{end}'
}

# Why each pending pod has not started, in Kubernetes' words: not
# scheduled (no node fits its CPU or memory, ...) or its image cannot be
# had (not present with imagePullPolicy Never, a pull that fails).
why_pending() {
    local pod scheduled waiting
    # Each field after the name starts with a letter and ':', so that none
    # is empty (read would merge empty fields between tabs).
    while IFS=$'\t' read -r pod scheduled waiting; do
        [[ -n $pod ]] || continue
        scheduled=${scheduled#s:}
        waiting=${waiting#w:}
        if [[ -n ${waiting// /} ]]; then
            say "pod $pod: its container is waiting: $waiting"
        elif [[ -n $scheduled ]]; then
            say "pod $pod: not scheduled: $scheduled"
        fi
    done < <(kc get pods -l "pace.run=$name" --field-selector=status.phase=Pending -o \
        'jsonpath={range .items[*]}{.metadata.name}{"\t"}s:{.status.conditions[?(@.type=="PodScheduled")].message}{"\t"}w:{.status.containerStatuses[*].state.waiting.reason} {.status.containerStatuses[*].state.waiting.message}{"\n"}{end}' ||
        true)
}

# Each index's pod log (stdout and stderr, as kubectl logs gives them) into
# OUT/shard-I.log. When an index had several pods (one was evicted and
# replaced), the one that succeeded, else the one that failed.
save_logs() {
    local index pod phase rank
    local -a chosen=() ranks=()
    while read -r index pod phase; do
        [[ $index =~ ^[0-9]+$ && -n $pod ]] || continue
        case $phase in
            Succeeded) rank=3 ;;
            Failed) rank=2 ;;
            *) rank=1 ;;
        esac
        if ((rank >= ${ranks[index]:-0})); then
            chosen[index]=$pod
            ranks[index]=$rank
        fi
    done < <(pods)
    [[ ${#chosen[@]} -gt 0 ]] || return 0
    for index in "${!chosen[@]}"; do
        kc logs "${chosen[index]}" -c pace >"$out/shard-$index.log" 2>&1 || true
    done
}

deadline=$((start_epoch + timeout))
warned_late=false
last=
while :; do
    # A failed kubectl call (the API server busy for a moment) is tried
    # again until the deadline, not a reason to stop the run.
    if status=$(kc get job "$name" -o \
        'jsonpath={.status.active}/{.status.succeeded}/{.status.failed}/{range .status.conditions[?(@.status=="True")]}{.type},{end}'); then
        IFS=/ read -r active succeeded failed conditions <<<"$status"
        progress="running ${active:-0}, succeeded ${succeeded:-0}, failed ${failed:-0}"
    else
        conditions=
        progress="status unknown (kubectl failed), trying again"
    fi
    case ,$conditions in
        *,Complete,*) break ;;
        *,Failed,*)
            message=$(kc get job "$name" -o 'jsonpath={.status.conditions[?(@.type=="Failed")].message}' || true)
            say "job $name failed: $message"
            save_logs
            for ((i = 0; i < shards; i++)); do
                if [[ -s $out/shard-$i.log ]] && grep -v '^{"schema_version":' "$out/shard-$i.log" | grep -q .; then
                    say "shard $i said ($out/shard-$i.log):"
                    grep -v '^{"schema_version":' "$out/shard-$i.log" | tail -n 20 | sed 's/^/  /' >&2
                fi
            done
            exit 2
            ;;
    esac
    if [[ $progress != "$last" ]]; then
        say "job $name: $progress"
        last=$progress
    fi
    now=$(date +%s)
    if ! $warned_late && ((now >= start_epoch)); then
        warned_late=true
        late=$(pods | awk '$3 == "Pending" { print $2 }' || true)
        if [[ -n $late ]]; then
            say "past the start time and still pending (a pod that starts after its first request was due refuses to run; a longer --lead helps):"
            kc get pods -l "pace.run=$name" -o wide >&2 || true
            why_pending
        fi
    fi
    if ((now > deadline)); then
        say "job $name did not finish within ${timeout}s of its start time:"
        kc get pods -l "pace.run=$name" -o wide >&2 || true
        save_logs
        exit 2
    fi
    sleep 2
done

# ----- collect ---------------------------------------------------------------------

save_logs
results=()
for ((i = 0; i < shards; i++)); do
    log=$out/shard-$i.log
    if [[ ! -s $log ]]; then
        say "shard $i: no log (is there a pod with completion index $i?)"
        exit 2
    fi
    # The JSON report lines; everything else is pace's messages (stderr) or
    # what a Lua script printed.
    grep '^{"schema_version":' "$log" >"$out/shard-$i.json" || true
    if ! tail -n 1 "$out/shard-$i.json" | grep -q '"report":"final"'; then
        say "shard $i: no final JSON report in its log ($log)"
        exit 2
    fi
    grep -v '^{"schema_version":' "$log" | sed "s/^/shard $i: /" >&2 || true
    results+=("$out/shard-$i.json")
done
say "results in $out/shard-0.json ... shard-$((shards - 1)).json"

if ! $merge; then
    exit 0
fi
report=$out/report.txt
for arg in ${merge_args[@]+"${merge_args[@]}"}; do
    case $arg in -e | --json) report=$out/report.json ;; esac
done
rc=0
"$pace" merge ${merge_args[@]+"${merge_args[@]}"} "${results[@]}" >"$report" || rc=$?
cat "$report"
if [[ -s $report ]]; then
    say "merged report in $report"
else
    say "pace merge failed (exit code $rc); the shards' reports are in $out"
fi
exit "$rc"
