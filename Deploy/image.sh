# Building Deploy/docker/Dockerfile with buildah on a machine that cannot pull base images, for
# Deploy/test-image.sh and Deploy/test-hosts.sh (sourced by both; not run on its own).
#
# What it does:
#   - keeps buildah's storage in $SPLICE_IMAGE_CACHE (/var/cache/splice-image), so the stand-in base
#     images and the build's layers survive between runs. The storage driver is overlay where the
#     kernel mounts it (it does on this kind of machine), else vfs (SPLICE_IMAGE_STORAGE_DRIVER
#     chooses): vfs keeps every layer as a full copy of the tree, and this Dockerfile's build stage
#     is nine layers over a 4.2 GB toolchain image, so under vfs the build keeps no intermediate
#     layers (--layers=false) and a rerun builds again;
#   - makes stand-ins for the Dockerfile's two base images under the names Docker would pull them by
#     (docker.io/library/debian:bookworm-slim and docker.io/library/swift:6.3-bookworm): the first
#     from `debootstrap --variant=minbase bookworm` trimmed like Debian's slim images, the second from
#     the first plus the packages Swift's own bookworm image installs and this machine's toolchain
#     (/opt/swift, copied into /usr as Swift's image has it);
#   - builds the Dockerfile as it is (`buildah bud --isolation chroot --pull=never`) into
#     $splice_image (localhost/splice:test).
#
# A short name in FROM is resolved as Docker does (unqualified names are docker.io's), through a
# registries.conf of our own; nothing is ever pulled (--pull=never): a missing stand-in is made here.

splice_image="${SPLICE_IMAGE:-localhost/splice:test}"
image_context=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)  # the checkout this file is in
image_cache="${SPLICE_IMAGE_CACHE:-/var/cache/splice-image}"
image_mirror="${SPLICE_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
image_debian=docker.io/library/debian:bookworm-slim
image_swift=docker.io/library/swift:6.3-bookworm
# What Swift's official bookworm image installs beside the toolchain (its Dockerfile, swift-docker).
image_swift_packages=(binutils git gnupg2 libc6-dev libcurl4-openssl-dev libedit2 libgcc-12-dev libpython3-dev
    libsqlite3-0 libstdc++-12-dev libxml2-dev libncurses-dev libz3-dev pkg-config tzdata zlib1g-dev)
image_toolchain="${SPLICE_SWIFT_TOOLCHAIN:-/opt/swift}"

mkdir -p "$image_cache"
cat >"$image_cache/registries.conf" <<'EOF'
# Short names resolve as Docker resolves them; buildah runs with --pull=never, so this only names.
unqualified-search-registries = ["docker.io"]
short-name-mode = "permissive"
EOF
export CONTAINERS_REGISTRIES_CONF="$image_cache/registries.conf"

# overlay if this kernel mounts it (tried once on two empty folders), else vfs.
image_storage_driver() {
    local probe status=0
    probe=$(mktemp -d "$image_cache/overlay-probe.XXXXXX")
    mkdir "$probe/lower" "$probe/upper" "$probe/work" "$probe/merged"
    mount -t overlay overlay -o "lowerdir=$probe/lower,upperdir=$probe/upper,workdir=$probe/work" \
        "$probe/merged" 2>/dev/null || status=$?
    [ "$status" -ne 0 ] || umount "$probe/merged"
    rm -rf "$probe"
    if [ "$status" -eq 0 ]; then echo overlay; else echo vfs; fi
}
image_driver="${SPLICE_IMAGE_STORAGE_DRIVER:-$(image_storage_driver)}"

# buildah with the cache's own storage (one per driver): the machine's default storage is left alone.
image_buildah() {
    buildah --root "$image_cache/storage-$image_driver" --runroot "$image_cache/run-$image_driver" \
        --storage-driver "$image_driver" "$@"
}

image_exists() {
    image_buildah inspect --type image "$1" >/dev/null 2>&1
}

image_log() {
    echo "image: $*" >&2
}

# debian:bookworm-slim: a minbase debootstrap, trimmed as Debian's slim images are (no manuals,
# documentation or translations, empty apt lists), with the same apt sources (updates, security).
image_make_debian() {
    if image_exists "$image_debian"; then
        return 0
    fi
    image_log "making a stand-in for $image_debian (debootstrap --variant=minbase bookworm, $image_mirror)"
    local root container mount
    root=$(mktemp -d "$image_cache/debootstrap.XXXXXX")
    debootstrap --variant=minbase bookworm "$root" "$image_mirror" >"$image_cache/debootstrap.log" 2>&1 || {
        tail -n 20 "$image_cache/debootstrap.log" >&2
        rm -rf "$root"
        return 1
    }
    mkdir -p "$root/etc/dpkg/dpkg.cfg.d"
    cat >"$root/etc/dpkg/dpkg.cfg.d/docker" <<'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/all_languages
path-include /usr/share/locale/locale.alias
path-exclude /usr/share/man/*
EOF
    find "$root/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
    find "$root/usr/share/doc" -mindepth 1 -type d -empty -delete
    rm -rf "$root/usr/share/groff" "$root/usr/share/info" "$root/usr/share/linda" "$root/usr/share/lintian" \
        "$root/usr/share/man"/*
    find "$root/usr/share/locale" -mindepth 1 -maxdepth 1 -not -name all_languages -not -name locale.alias \
        -exec rm -rf {} +
    rm -f "$root/etc/apt/sources.list"
    cat >"$root/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $image_mirror
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: ${image_mirror%/debian}/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
    rm -rf "$root/var/lib/apt/lists"/* "$root/var/cache/apt"/*.bin "$root/var/cache/apt/archives"/*.deb \
        "$root/var/log"/*.log "$root/dev"/* "$root/run"/* "$root/tmp"/*
    : >"$root/etc/hostname"
    container=$(image_buildah from scratch)
    mount=$(image_buildah mount "$container")
    tar -C "$root" --numeric-owner -cf - . | tar -C "$mount" --numeric-owner -xpf -
    image_buildah umount "$container" >/dev/null
    image_buildah config --cmd '["bash"]' --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        --os linux --arch amd64 --label org.splice.stand-in="debootstrap --variant=minbase bookworm" "$container"
    image_buildah commit --quiet --rm "$container" "$image_debian" >/dev/null
    rm -rf "$root"
}

# swift:6.3-bookworm: the Debian stand-in, the packages Swift's image adds, and the toolchain of
# this machine in /usr. Remade when the machine's toolchain reports another version.
image_make_swift() {
    local version container mount
    version=$("$image_toolchain/usr/bin/swift" --version 2>/dev/null | head -n 1)
    if [ -z "$version" ]; then
        image_log "no Swift toolchain at $image_toolchain (SPLICE_SWIFT_TOOLCHAIN) to make $image_swift from"
        return 1
    fi
    if image_exists "$image_swift" && [ "$(image_buildah inspect --type image \
        --format '{{index .ImageAnnotations "org.splice.toolchain"}}' "$image_swift")" = "$version" ]; then
        return 0
    fi
    image_log "making a stand-in for $image_swift ($version from $image_toolchain)"
    container=$(image_buildah from --pull=never "$image_debian")
    image_buildah run --isolation chroot "$container" -- sh -c \
        "export DEBIAN_FRONTEND=noninteractive && apt-get update -q && apt-get install -y -q --no-install-recommends ${image_swift_packages[*]} && rm -rf /var/lib/apt/lists/*" \
        >"$image_cache/swift-packages.log" 2>&1 || {
        tail -n 20 "$image_cache/swift-packages.log" >&2
        image_buildah rm "$container" >/dev/null
        return 1
    }
    mount=$(image_buildah mount "$container")
    tar -C "$image_toolchain" --numeric-owner -cf - usr | tar -C "$mount" --numeric-owner -xpf -
    image_buildah umount "$container" >/dev/null
    image_buildah config --annotation org.splice.toolchain="$version" \
        --label org.splice.stand-in="$image_debian + Swift's packages + $image_toolchain" "$container"
    image_buildah commit --quiet --rm "$container" "$image_swift" >/dev/null
    # The image it replaced (an older toolchain), if any, is no longer named: drop it.
    image_buildah rmi --prune >/dev/null 2>&1 || true
}

# Builds the Dockerfile as it is. With overlay, --layers keeps every step's result, so a rerun with
# unchanged sources takes seconds and one with changed sources starts again at `COPY Sources` (the
# toolchain image and its apt layer stay).
image_build() {
    image_make_debian
    image_make_swift
    local layers=--layers
    [ "$image_driver" = overlay ] || layers=--layers=false
    image_log "building $image_context/Deploy/docker/Dockerfile into $splice_image (buildah bud --isolation chroot, $image_driver)"
    image_buildah bud --isolation chroot "$layers" --pull=never -f "$image_context/Deploy/docker/Dockerfile" \
        -t "$splice_image" "$image_context" >"$image_cache/build.log" 2>&1 || {
        tail -n 40 "$image_cache/build.log" >&2
        image_log "the build failed; its whole log is $image_cache/build.log"
        return 1
    }
    image_prune_stale
}

# Each build with changed sources leaves the layers of the build before it (a release build's
# .build folder is gigabytes): after a build, drop every unnamed image that this build neither made
# nor reused, so the cache holds one build's steps.
image_prune_stale() {
    local used id name
    used=$(grep -oE -- '--> (Using cache )?[0-9a-f]{11,64}' "$image_cache/build.log" | awk '{ print substr($NF, 1, 11) }')
    image_buildah images -a --noheading --format '{{.ID}} {{.Name}}' | while read -r id name; do
        [ "$name" = "<none>" ] || continue
        grep -qx "${id:0:11}" <<<"$used" && continue
        image_buildah rmi "$id" >/dev/null 2>&1 || true
    done
}

# The image's size as `docker images` shows it: its layers uncompressed ("182 MB").
image_size() {
    image_buildah images --format '{{.Size}}' "$1"
}

# MARK: - Running the image's files as a container runtime would

# OCI runtimes cannot start containers on this machine, and `buildah run --isolation chroot` starts
# its command in the caller's PID namespace, without the image's ENTRYPOINT, as a child of buildah.
# image_start does what a runtime does with a container's process instead: the image's ENTRYPOINT
# (tini) as PID 1 of new PID, mount, UTS and IPC namespaces (and of the network namespace given),
# chrooted into a working container's root file system (buildah from + mount: the image's files,
# writable, its own), /proc, a minimal /dev and an empty /tmp mounted fresh, the image's USER,
# WORKDIR and ENV. Killing that PID 1 kills everything in the namespace, as stopping a container does.

# Reads the image's configuration into image_entrypoint, image_env, image_user, image_workdir.
image_read_config() {
    local config
    config=$(image_buildah inspect --type image "$splice_image" | python3 -c 'import json, sys
config = json.load(sys.stdin)["OCIv1"]["config"]
print(json.dumps(config))')
    mapfile -t image_entrypoint < <(python3 -c 'import json,sys; [print(x) for x in json.load(sys.stdin).get("Entrypoint") or []]' <<<"$config")
    mapfile -t image_env < <(python3 -c 'import json,sys; [print(x) for x in json.load(sys.stdin).get("Env") or []]' <<<"$config")
    image_user=$(python3 -c 'import json,sys; print(json.load(sys.stdin).get("User") or "root")' <<<"$config")
    image_workdir=$(python3 -c 'import json,sys; print(json.load(sys.stdin).get("WorkingDir") or "/")' <<<"$config")
}

# A working container of the image: prints "ID ROOT" (its root file system, mounted).
image_container() {
    local container
    container=$(image_buildah from --pull=never --name "$1" "$splice_image")
    echo "$container $(image_buildah mount "$container")"
}

# The process a runtime starts: run by image_start inside the new namespaces.
# shellcheck disable=SC2016
image_init='
set -e
root=$1 name=$2 user=$3 workdir=$4 count=$5
shift 5
environment=("${@:1:count}")
shift "$count"
hostname "$name"
mount -t proc proc "$root/proc"
mount -t tmpfs -o mode=1777,size=2g tmpfs "$root/tmp"
mount -t tmpfs -o mode=755,size=64k tmpfs "$root/dev"
for node in null zero full random urandom tty; do
    touch "$root/dev/$node"
    mount --bind "/dev/$node" "$root/dev/$node"
done
mkdir -m 1777 "$root/dev/shm"
ln -s /proc/self/fd "$root/dev/fd"
uid=$(awk -F: -v u="$user" "\$1 == u || \$3 == u { print \$3 \":\" \$4; exit }" "$root/etc/passwd")
exec chroot --userspec="${uid:?no user $user in the image}" --groups= "$root" \
    /usr/bin/env -i -C "$workdir" "${environment[@]}" "$@"
'

# image_run NETNS ROOT LOG HOSTNAME [VARIABLE=VALUE …] -- ARGUMENT…
# Runs the image's entrypoint with ARGUMENTs (its CMD replaced) as described above, its output
# appended to LOG, and returns its exit status; VARIABLE=VALUE are added to (or override) the
# image's ENV.
image_run() {
    local netns=$1 root=$2 log=$3 name=$4
    shift 4
    local environment=("${image_env[@]}")
    while [ "$1" != -- ]; do
        environment+=("$1")
        shift
    done
    shift
    ip netns exec "$netns" unshare --pid --fork --mount --uts --ipc --propagation private --kill-child \
        bash -c "$image_init" image-init "$root" "$name" "$image_user" "$image_workdir" \
        "${#environment[@]}" "${environment[@]}" "${image_entrypoint[@]}" "$@" >>"$log" 2>&1
}

# image_start: image_run in the background. Sets started_pid to the host's PID of the container's
# PID 1 (tini) and started_wrapper to the PID to `wait` for (its exit status is the container's).
image_start() {
    local root=$2 log=$3 name=$4
    # The subshell's own stderr would only carry bash's note that its command was killed.
    image_run "$@" 2>/dev/null &
    started_wrapper=$!
    started_pid=""
    local candidate child
    for _ in $(seq 200); do
        # The wrapper (a subshell) → unshare → the container's PID 1.
        for child in $(pgrep -P "$started_wrapper" || true); do
            for candidate in $(pgrep -P "$child" || true); do
                if [ "$(readlink "/proc/$candidate/exe" 2>/dev/null)" = "$root/usr/bin/tini" ]; then
                    started_pid=$candidate
                    return 0
                fi
            done
        done
        kill -0 "$started_wrapper" 2>/dev/null || break
        sleep 0.05
    done
    echo "image: the container $name did not start; the end of $log:" >&2
    tail -n 20 "$log" >&2
    return 1
}

# A command in a working container, as `buildah run` runs it (the image's user, no entrypoint).
image_exec() {
    local container=$1
    shift
    image_buildah run --isolation chroot "$container" -- "$@"
}

# Kills every process in network namespace NETNS (each started here lives in one) and deletes it.
image_netns_delete() {
    local netns=$1 process
    for _ in 1 2 3; do
        process=$(ip netns pids "$netns" 2>/dev/null || true)
        [ -z "$process" ] && break
        kill -KILL $process 2>/dev/null || true
        sleep 0.2
    done
    ip netns del "$netns" 2>/dev/null || true
}

# MARK: - PostgreSQL in a namespace (the image has no server: in containers the database is a service of its own)

image_pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)

# image_pg_init DATA PASSWORD CLIENTS: a new cluster in DATA whose superuser splice (PASSWORD) owns a
# database splice, reached over TCP from the CIDR CLIENTS with scram-sha-256.
image_pg_init() {
    local data=$1 password=$2 clients=$3
    mkdir -p "$data"
    chown postgres:postgres "$data"
    chmod 700 "$data"
    printf '%s\n' "$password" >"$data.password"
    chown postgres "$data.password"
    setpriv --reuid=postgres --regid=postgres --init-groups "$image_pg_bin/initdb" -D "$data" -U splice \
        --pwfile="$data.password" --auth-local=trust --auth-host=scram-sha-256 -E UTF8 >/dev/null
    rm -f "$data.password"
    echo "host all all $clients scram-sha-256" >>"$data/pg_hba.conf"
}

# image_pg_start NETNS DATA ADDRESS LOG: the server as PID 1 of PID, mount and IPC namespaces of its
# own (its socket in a private /tmp), listening on ADDRESS. Sets started_pid and started_wrapper.
image_pg_start() {
    local netns=$1 data=$2 address=$3 log=$4
    # shellcheck disable=SC2016
    ip netns exec "$netns" unshare --pid --fork --mount --ipc --propagation private --kill-child bash -c '
        mount -t tmpfs -o mode=1777 tmpfs /tmp
        exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" -D "$1" \
            -c listen_addresses="$2" -c unix_socket_directories=/tmp' \
        "$image_pg_bin/postgres" "$data" "$address" >>"$log" 2>&1 &
    started_wrapper=$!
    started_pid=""
    for _ in $(seq 100); do
        started_pid=$(pgrep -P "$started_wrapper" || true)
        [ -n "$started_pid" ] && break
        sleep 0.05
    done
}

# image_pg_ready NETNS URL SECONDS: waits until the server answers at URL.
image_pg_ready() {
    local netns=$1 url=$2 patience=$3
    for _ in $(seq $((patience * 10))); do
        ip netns exec "$netns" psql "$url" -Atqc 'SELECT 1' >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    echo "image: PostgreSQL did not answer at ${url##*@} within ${patience}s" >&2
    return 1
}
