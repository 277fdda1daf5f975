#!/usr/bin/env bash
# Runs the Windows build of gateway/proc's tests (job objects, kill-on-close,
# PATHEXT resolution, command-line quoting, ACLs) under Wine, plus the
# Windows-only tests of gateway/config, gateway/internal/files (replacing
# a file a reader holds open) and wasm (renaming a stored result another
# handle holds open) and the Windows end-to-end tests of
# the sluice binary (cmd/sluice), on this Linux machine.
#
# Installs what it needs when missing, from Debian: wine and wine64, and the
# MinGW binutils used to build one small DLL. Go (1.22 and later) needs
# ProcessPrng from bcryptprimitives.dll, which Wine 8.0 (Debian 12) does
# not have; the script assembles a two-function bcryptprimitives.dll that
# implements it with advapi32's SystemFunction036 (RtlGenRandom) and puts it
# in the Wine prefix's system32.
#
# Everything lives under .cache/wine (the Wine prefix included); the Wine
# server it starts for that prefix is stopped on exit. Test output goes to a
# file: Wine's server outlives the test process and would hold a pipe open.
#
# Usage: scripts/wine-test.sh [extra go test flags for the binary, e.g. -test.short]
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
work=$root/.cache/wine
mkdir -p "$work"
export WINEPREFIX=$work/prefix WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="

need=()
command -v wine >/dev/null 2>&1 || need+=(wine wine64)
command -v x86_64-w64-mingw32-as >/dev/null 2>&1 || need+=(binutils-mingw-w64-x86-64)
if ((${#need[@]})); then
	if [[ $(id -u) != 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
		echo "wine-test: missing ${need[*]}; install them (Debian: apt-get install ${need[*]})" >&2
		exit 1
	fi
	echo "wine-test: installing ${need[*]}" >&2
	apt-get update -qq >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >&2
fi

# Every process this run starts carries a token no other process has:
# Wine starts some Windows children in sessions of their own (out of reach
# of a process-group kill), and a few outlive wineserver -k, so the exit
# trap ends exactly the pids whose environment holds this run's token.
export SLUICE_WINE_RUN="wine-test-$$-$(date +%s%N)"
cleanup() {
	wineserver -k >/dev/null 2>&1 || true
	local env pid
	for env in /proc/[0-9]*/environ; do
		pid=${env#/proc/}
		pid=${pid%/environ}
		[[ $pid == "$$" ]] && continue
		# (A process may be gone, or not ours to read, by the time we look.)
		if { tr '\0' '\n' <"$env" | grep -qx "SLUICE_WINE_RUN=$SLUICE_WINE_RUN"; } 2>/dev/null; then
			kill -KILL "$pid" 2>/dev/null || true
		fi
	done
}
trap cleanup EXIT

sys32=$WINEPREFIX/drive_c/windows/system32
if [[ ! -f $sys32/kernel32.dll ]]; then
	echo "wine-test: creating the Wine prefix" >&2
	timeout -k 10 300 wineboot -i >/dev/null 2>&1 || true
	timeout -k 10 120 wineserver -w || true
fi
if [[ ! -f $sys32/bcryptprimitives.dll ]]; then
	dll=$work/dll
	mkdir -p "$dll"
	cat >"$dll/shim.s" <<'EOF'
	.text
	.globl	ProcessPrng
ProcessPrng:			# BOOL ProcessPrng(PBYTE data, SIZE_T len)
	subq	$40, %rsp
	call	*__imp_SystemFunction036(%rip)	# BOOLEAN RtlGenRandom(PVOID, ULONG)
	movzbl	%al, %eax
	addq	$40, %rsp
	ret
	.globl	DllEntry
DllEntry:
	movl	$1, %eax
	ret
EOF
	printf 'LIBRARY advapi32.dll\nEXPORTS\nSystemFunction036\n' >"$dll/advapi32.def"
	printf 'LIBRARY bcryptprimitives.dll\nEXPORTS\nProcessPrng\n' >"$dll/bcp.def"
	x86_64-w64-mingw32-dlltool -d "$dll/advapi32.def" -l "$dll/libadvapi32.a"
	x86_64-w64-mingw32-as -o "$dll/shim.o" "$dll/shim.s"
	x86_64-w64-mingw32-ld -shared --entry=DllEntry -o "$dll/bcryptprimitives.dll" "$dll/bcp.def" "$dll/shim.o" "$dll/libadvapi32.a"
	cp "$dll/bcryptprimitives.dll" "$sys32/"
fi

GOOS=windows GOARCH=amd64 go test -c -o "$work/proc.test.exe" ./gateway/proc
GOOS=windows GOARCH=amd64 go test -c -o "$work/config.test.exe" ./gateway/config
GOOS=windows GOARCH=amd64 go test -c -o "$work/files.test.exe" ./gateway/internal/files
GOOS=windows GOARCH=amd64 go test -c -o "$work/wasm.test.exe" ./wasm
GOOS=windows GOARCH=amd64 go test -c -o "$work/sluice.test.exe" ./cmd/sluice
GOOS=windows GOARCH=amd64 go build -o "$work/sluice.exe" ./cmd/sluice

# One Wine server for the whole run. Left to itself the server exits a few
# seconds after its last client, and a test binary started while it is
# shutting down fails at once ("wine client error: recvmsg: Connection reset
# by peer") before any test runs. A persistent server (stopped by the exit
# trap) closes that window. A server already up for this prefix (one left
# by a run that was killed before its exit trap: persistent, it never
# exits) would make wineserver -p fail, so it is stopped first.
wineserver -k >/dev/null 2>&1 || true
timeout -k 10 60 wineserver -w || true
# (Its output goes to a file: the server it forks would hold a pipe open.)
if ! wineserver -p </dev/null >/dev/null 2>"$work/wineserver.log"; then
	echo "wine-test: cannot start a persistent Wine server for $WINEPREFIX: $(cat "$work/wineserver.log"); stop the one running for it (WINEPREFIX=$WINEPREFIX wineserver -k) and run again" >&2
	exit 1
fi
status=0
bound=720 # seconds for one test binary under Wine, start-up included
run() {
	local name=$1
	shift
	local log=$work/$name.log
	echo "wine-test: $name $*" >&2
	# The binary has its own -test.timeout; this bound also covers Wine
	# itself hanging before or after the tests.
	if (cd "$work" && timeout -k 10 "$bound" wine "$name.test.exe" "$@" >"$log" 2>&1); then
		grep -E '^(ok|PASS|--- (PASS|FAIL|SKIP))' "$log" | grep -v '^    ' | tail -n 80 >&2
	else
		cat "$log" >&2
		echo "wine-test: $name FAILED" >&2
		status=1
	fi
}
# TestMkdirPrivate and TestCheckPrivate are left out (TestWindowsPrivateDirOwner runs): Wine 8 does not store file access lists
# (SetNamedSecurityInfo succeeds, GetNamedSecurityInfo returns a default
# one), so the owner-only ACL can be compiled and called here but not
# observed.
run proc -test.v -test.timeout 10m -test.skip '^Test(MkdirPrivate|CheckPrivate)$' "$@"
run config -test.v -test.run '^TestWindows' "$@"
run files -test.v -test.run '^(TestWindows|TestLock$)' "$@"
run wasm -test.v -test.run '^TestWindows' "$@"
# The Windows end-to-end tests of the sluice binary (serve over Windows
# pipes, teardown, kill-on-close when sluice is killed); the test binary
# cannot build sluice itself here, so it is handed the one built above.
export SLUICE_TEST_BIN=sluice.exe
run sluice -test.v -test.run '^TestWindows' -test.timeout 5m "$@"
exit $status
