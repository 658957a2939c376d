#!/usr/bin/env bash
# Builds the OpenWorker menu-bar app and runs the project's checks.
# Run ./build.sh help for the commands.
set -euo pipefail
cd "$(dirname "$0")"

readonly app_name="OpenWorker"
readonly bundle="build/${app_name}.app"
readonly main_pkg="./app/openworker"
readonly helper_pkg="./app/openworker-runner"
readonly helper_name="openworker-runner"
# The MCP server (openworker mcp) is a program of its own beside the CLI: the CLI is
# built with -tags mcpapart, so that it links none of the server's packages (the MCP SDK,
# its JSON schemas), which every run and session exec would otherwise start up.
readonly mcp_name="openworker-mcp"
# The agent hosts' shell: an agent host that openworker agent starts runs each of its shell
# commands with it, so it is a small program of its own, without cgo.
readonly shell_pkg="./app/openworker-shell"
readonly shell_name="openworker-shell"

# darwinkit v0.5.0's libffi bridge keeps a pointer into a slice that Go 1.25
# and later allocate on the stack; the app then aborts at its first Cocoa
# delegate callback. darwinkit's packages are compiled without optimisation,
# the setting its users report working (progrium/darwinkit#286); Run checks it.
readonly darwinkit_gcflags='github.com/progrium/darwinkit/...=-N -l'

usage() {
	cat <<'USAGE'
usage: ./build.sh COMMAND

commands:
  app     build build/OpenWorker.app: the openworker binary with cgo (the
          menu-bar app needs it), and without cgo the openworker-runner
          helper (what runs inside the wall) and openworker-mcp (the MCP
          server, which openworker mcp hands over to), each for arm64 and amd64 (joined
          with lipo when both build), for macOS 12.0 and later (checked),
          Info.plist and resources/, signed, and zipped for release as
          build/OpenWorker-VERSION-macos.zip. macOS only.
          Signed ad hoc, unless OPENWORKER_SIGN_IDENTITY names a Developer
          ID ("Developer ID Application: …"): then with the hardened
          runtime and a timestamp, each helper verified strictly. With
          OPENWORKER_NOTARY_PROFILE (a notarytool keychain profile) too, the
          zip is notarized (anything but Accepted stops the build with the
          service's log), the ticket stapled to the app, and Gatekeeper asked
          (spctl). OPENWORKER_UNSIGNED_EXECUTABLE_MEMORY=0 signs the app
          without its one entitlement (see the switch's reason below).
  helper  build build/openworker-runner, the helper that runs inside the
          wall on a Mac (the runner, ssh's ProxyCommand), without cgo.
  cli     build build/openworker, the CLI and daemon for this machine, with
          build/openworker-mcp (the MCP server, apart so that the CLI's
          every start skips its packages) and the helper beside it. On
          Linux they are static, without cgo: it has no use for cgo there, and
          a binary that skips the dynamic loader starts faster, which every
          sandboxed command pays for twice (the CLI and the sandbox's first
          process).
  check   the project's checks, exactly as CI runs them: gofmt, go vet,
          go test -race, a macOS build without cgo, and a type-check of the
          macOS cgo build (the Cocoa shell) with ui/darwincheck.
  clean   remove build/.
  help    this text.
USAGE
}

step() { printf '==> %s\n' "$*" >&2; }

# bundle_version is the app's version, kept in one place: Info.plist's
# CFBundleShortVersionString. The binary gets the same through -ldflags, so
# `openworker version` and Finder agree.
bundle_version() {
	sed -n '/<key>CFBundleShortVersionString<\/key>/{n;s/.*<string>\(.*\)<\/string>.*/\1/p;}' Info.plist
}

# min_macos is the oldest macOS the app opens on: Info.plist's
# LSMinimumSystemVersion, which a test keeps equal to this. Without it, clang
# marks the cgo binary with the build Mac's own version, and an older macOS
# refuses to open it whatever Info.plist says.
readonly min_macos="12.0"

# build_arch builds the app's binary for one CPU (arm64 or amd64) into $2.
build_arch() {
	local arch="$1" out="$2" version="$3"
	# The go command passes clang -arch for the target, so an Apple silicon Mac
	# with the Command Line Tools builds the Intel binary too.
	MACOSX_DEPLOYMENT_TARGET="$min_macos" \
		CGO_CFLAGS="-mmacosx-version-min=${min_macos}" \
		CGO_LDFLAGS="-mmacosx-version-min=${min_macos}" \
		CGO_ENABLED=1 GOOS=darwin GOARCH="$arch" go build -trimpath -tags mcpapart \
		-gcflags="$darwinkit_gcflags" \
		-ldflags="-X main.version=${version}" \
		-o "$out" "$main_pkg"
}

# build_helper_arch builds the helper for one CPU into $2: no cgo, so no
# AppKit, darwinkit or dynamic loader work at each start inside the wall.
build_helper_arch() {
	local arch="$1" out="$2"
	CGO_ENABLED=0 GOOS=darwin GOARCH="$arch" go build -trimpath -o "$out" "$helper_pkg"
}

# build_shell_arch builds the agent hosts' shell for one CPU into $2, without cgo.
build_shell_arch() {
	local arch="$1" out="$2"
	CGO_ENABLED=0 GOOS=darwin GOARCH="$arch" go build -trimpath -o "$out" "$shell_pkg"
}

# build_mcp_arch builds the MCP server for one CPU into $2: the CLI with the
# server in it, without cgo, so no AppKit or darwinkit in an agent's server.
build_mcp_arch() {
	local arch="$1" out="$2" version="$3"
	CGO_ENABLED=0 GOOS=darwin GOARCH="$arch" go build -trimpath \
		-ldflags="-X main.version=${version}" -o "$out" "$main_pkg"
}

# join puts the built slices $2… into one binary $1 (lipo when there are two).
join() {
	local out="$1"
	shift
	if [ "$#" -gt 1 ]; then
		lipo -create -output "$out" "$@"
	else
		cp "$1" "$out"
	fi
}

# version_le says whether version $1 is at most $2 (major.minor[.patch]).
version_le() {
	[ "$(printf '%s\n%s\n' "$1" "$2" | sort -t. -k1,1n -k2,2n -k3,3n | head -n1)" = "$1" ]
}

# check_minos fails unless every slice of binary $1 says it runs on min_macos:
# its LC_BUILD_VERSION minos (vtool, or otool where vtool is missing).
check_minos() {
	local bin="$1" found
	if command -v vtool >/dev/null 2>&1; then
		found="$(vtool -show-build "$bin" | awk '$1 == "minos" { print $2 }')"
	elif command -v otool >/dev/null 2>&1; then
		found="$(otool -l "$bin" | awk '$1 == "minos" { print $2 }')"
	else
		echo "build.sh app: neither vtool nor otool is here to check which macOS ${bin} needs (install the Command Line Tools: xcode-select --install)" >&2
		exit 1
	fi
	if [ -z "$found" ]; then
		echo "build.sh app: ${bin} names no minimum macOS (no LC_BUILD_VERSION minos)" >&2
		exit 1
	fi
	local v
	for v in $found; do
		if ! version_le "$v" "$min_macos"; then
			echo "build.sh app: ${bin} needs macOS ${v}, but the app promises ${min_macos} (LSMinimumSystemVersion): it would not open there" >&2
			exit 1
		fi
	done
	step "$(basename "$bin") runs on macOS ${min_macos} and later (minos: $(echo $found))"
}

# unsigned_executable_memory is the app's one entitlement under the hardened
# runtime, as one switch: 1 grants
# com.apple.security.cs.allow-unsigned-executable-memory, 0 signs the app with
# no entitlement at all. Why it is there: darwinkit calls Objective-C through
# libffi, whose closures (every delegate and target/action callback) may need
# memory that is written and then executed, which the hardened runtime
# forbids unless this is granted. Why it may go: macOS's own libffi (macOS 11
# and later) makes closures from pre-mapped trampolines, so darwinkit may need
# none; only a Mac can show it. To try: build signed with
# OPENWORKER_UNSIGNED_EXECUTABLE_MEMORY=0, open the app, open Settings and
# answer a card (delegates and actions fire); if they do, make 0 the default.
# The helpers get no entitlement: they are plain Go, without cgo.
readonly unsigned_executable_memory="${OPENWORKER_UNSIGNED_EXECUTABLE_MEMORY:-1}"

# write_entitlements writes the app binary's entitlements for the hardened
# runtime to $1 (see unsigned_executable_memory).
write_entitlements() {
	cat >"$1" <<'PLIST'
<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
	<key>com.apple.security.cs.allow-unsigned-executable-memory</key>
	<true/>
</dict>
</plist>
PLIST
}

# sign signs the bundle, inside out (the helper, then the app), with the
# Developer ID in OPENWORKER_SIGN_IDENTITY, the hardened runtime and a
# timestamp; ad hoc ("-") without it, which is enough to run on this Mac.
sign() {
	local helper="$bundle/Contents/Helpers/${helper_name}" mcp="$bundle/Contents/Helpers/${mcp_name}" shell="$bundle/Contents/Helpers/${shell_name}"
	if ! command -v codesign >/dev/null 2>&1; then
		step "codesign not found: ${bundle} is unsigned"
		return
	fi
	local identity="${OPENWORKER_SIGN_IDENTITY:-}"
	if [ -z "$identity" ]; then
		step "ad-hoc signing (set OPENWORKER_SIGN_IDENTITY to sign with a Developer ID)"
		codesign --force --sign - --timestamp=none "$helper"
		codesign --verify --strict --verbose=2 "$helper"
		codesign --force --sign - --timestamp=none "$mcp"
		codesign --verify --strict --verbose=2 "$mcp"
		codesign --force --sign - --timestamp=none "$shell"
		codesign --verify --strict --verbose=2 "$shell"
		codesign --force --sign - --timestamp=none "$bundle"
	else
		step "signing with ${identity}, hardened runtime"
		codesign --force --options runtime --timestamp --sign "$identity" "$helper"
		codesign --verify --strict --verbose=2 "$helper"
		codesign --force --options runtime --timestamp --sign "$identity" "$mcp"
		codesign --verify --strict --verbose=2 "$mcp"
		codesign --force --options runtime --timestamp --sign "$identity" "$shell"
		codesign --verify --strict --verbose=2 "$shell"
		rm -f build/entitlements.plist
		if [ "$unsigned_executable_memory" = 1 ]; then
			write_entitlements build/entitlements.plist
			codesign --force --options runtime --timestamp --entitlements build/entitlements.plist --sign "$identity" "$bundle"
		else
			step "the app is signed with no entitlement (OPENWORKER_UNSIGNED_EXECUTABLE_MEMORY=0)"
			codesign --force --options runtime --timestamp --sign "$identity" "$bundle"
		fi
	fi
	codesign --verify --strict --deep "$bundle"
}

# json_field prints the string value of the top-level field $1 of the one-line
# JSON object on standard input (notarytool's --output-format json), or nothing.
json_field() {
	sed -n 's/.*"'"$1"'"[[:space:]]*:[[:space:]]*"\([^"]*\)".*/\1/p' | head -n1
}

# notarize sends the zip $1 to Apple's notary service with the keychain
# profile in OPENWORKER_NOTARY_PROFILE (made once with
# xcrun notarytool store-credentials), waits for the verdict, staples the
# ticket to the app so that it opens offline, and zips the stapled app again.
notarize() {
	local zip="$1" profile="${OPENWORKER_NOTARY_PROFILE:-}"
	if [ -z "$profile" ]; then
		return
	fi
	if [ -z "${OPENWORKER_SIGN_IDENTITY:-}" ]; then
		echo "build.sh app: OPENWORKER_NOTARY_PROFILE needs OPENWORKER_SIGN_IDENTITY: the notary service takes only apps signed with a Developer ID" >&2
		exit 1
	fi
	step "notarizing ${zip} (profile ${profile})"
	# --wait exits 0 for a submission the service judged Invalid too: its status
	# is read, and anything but Accepted stops the build with the service's log.
	local answer id status
	answer="$(xcrun notarytool submit "$zip" --keychain-profile "$profile" --wait --output-format json)"
	id="$(printf '%s\n' "$answer" | json_field id)"
	status="$(printf '%s\n' "$answer" | json_field status)"
	if [ "$status" != "Accepted" ]; then
		echo "build.sh app: the notary service's answer for ${zip} is \"${status:-none}\", not Accepted: ${answer}" >&2
		if [ -n "$id" ]; then
			echo "build.sh app: its log (xcrun notarytool log ${id}):" >&2
			xcrun notarytool log "$id" --keychain-profile "$profile" >&2 || true
		fi
		exit 1
	fi
	step "notarized (submission ${id})"
	xcrun stapler staple "$bundle"
	xcrun stapler validate "$bundle"
	# What Gatekeeper will say on another Mac: accepted, from a notarized Developer ID.
	spctl -a -vv -t exec "$bundle"
	rm -f "$zip"
	ditto -c -k --keepParent "$bundle" "$zip"
}

build_app() {
	case "$unsigned_executable_memory" in
	0 | 1) ;;
	*)
		echo "build.sh app: OPENWORKER_UNSIGNED_EXECUTABLE_MEMORY is \"${unsigned_executable_memory}\"; it is 1 (the app gets allow-unsigned-executable-memory) or 0 (no entitlement)" >&2
		exit 2
		;;
	esac
	if [ "$(uname -s)" != "Darwin" ]; then
		echo "build.sh app: the menu-bar app is built on macOS (cgo links against Cocoa); this is $(uname -s). To check the macOS code from here, run ./build.sh check." >&2
		exit 1
	fi
	local version
	version="$(bundle_version)"
	if [ -z "$version" ]; then
		echo "build.sh app: Info.plist has no CFBundleShortVersionString" >&2
		exit 1
	fi

	step "building ${bundle} ${version}"
	rm -rf "$bundle" build/arch
	mkdir -p "$bundle/Contents/MacOS" "$bundle/Contents/Helpers" "$bundle/Contents/Resources" build/arch

	# Both CPUs when both build, joined into one universal binary. This Mac's
	# own CPU must build; the other is skipped with a warning (a toolchain
	# without it), so a developer build never fails for a release concern.
	local host arch
	local built=()
	case "$(uname -m)" in
	arm64) host=arm64 ;;
	*) host=amd64 ;;
	esac
	local helpers=() mcps=() shells=()
	for arch in arm64 amd64; do
		if build_arch "$arch" "build/arch/openworker-${arch}" "$version"; then
			built+=("build/arch/openworker-${arch}")
			build_helper_arch "$arch" "build/arch/${helper_name}-${arch}"
			helpers+=("build/arch/${helper_name}-${arch}")
			build_mcp_arch "$arch" "build/arch/${mcp_name}-${arch}" "$version"
			mcps+=("build/arch/${mcp_name}-${arch}")
			build_shell_arch "$arch" "build/arch/${shell_name}-${arch}"
			shells+=("build/arch/${shell_name}-${arch}")
		elif [ "$arch" = "$host" ]; then
			echo "build.sh app: the ${arch} build failed" >&2
			exit 1
		else
			step "the ${arch} build failed; the app is ${host} only"
		fi
	done
	if [ "${#built[@]}" -gt 1 ] && ! command -v lipo >/dev/null 2>&1; then
		step "lipo not found; the app is ${host} only"
		built=("build/arch/openworker-${host}")
		helpers=("build/arch/${helper_name}-${host}")
		mcps=("build/arch/${mcp_name}-${host}")
		shells=("build/arch/${shell_name}-${host}")
	fi
	[ "${#built[@]}" -gt 1 ] && step "joining arm64 and amd64 with lipo"
	join "$bundle/Contents/MacOS/openworker" "${built[@]}"
	join "$bundle/Contents/Helpers/${helper_name}" "${helpers[@]}"
	join "$bundle/Contents/Helpers/${mcp_name}" "${mcps[@]}"
	join "$bundle/Contents/Helpers/${shell_name}" "${shells[@]}"
	check_minos "$bundle/Contents/MacOS/openworker"
	check_minos "$bundle/Contents/Helpers/${helper_name}"
	check_minos "$bundle/Contents/Helpers/${mcp_name}"
	check_minos "$bundle/Contents/Helpers/${shell_name}"

	cp Info.plist "$bundle/Contents/Info.plist"
	cp -R resources/. "$bundle/Contents/Resources/"
	if command -v plutil >/dev/null 2>&1; then
		plutil -lint "$bundle/Contents/Info.plist" >/dev/null
	fi

	sign

	# ditto keeps the signature and the bundle's metadata, which zip can lose.
	local zip="build/${app_name}-${version}-macos.zip"
	rm -f "$zip"
	ditto -c -k --keepParent "$bundle" "$zip"
	notarize "$zip"
	step "built ${bundle} and ${zip}"

	cat >&2 <<EOF

Open the app:
  open ${bundle}

Its binary is also the CLI (openworker mcp, openworker session …), which
attaches to the running app. To put it on your PATH:
  sudo ln -sf "$(pwd)/${bundle}/Contents/MacOS/openworker" /usr/local/bin/openworker
or, without sudo, into a folder of yours that is on PATH:
  mkdir -p ~/.local/bin && ln -sf "$(pwd)/${bundle}/Contents/MacOS/openworker" ~/.local/bin/openworker
EOF
}

build_cli() {
	local cgo=1
	if [ "$(uname -s)" = "Linux" ]; then
		cgo=0
	fi
	mkdir -p build
	CGO_ENABLED="$cgo" go build -trimpath -tags mcpapart -o build/openworker "$main_pkg"
	step "built build/openworker"
	CGO_ENABLED=0 go build -trimpath -o "build/${mcp_name}" "$main_pkg"
	step "built build/${mcp_name}"
	CGO_ENABLED=0 go build -trimpath -o "build/${shell_name}" "$shell_pkg"
	step "built build/${shell_name}"
	build_helper
}

# build_helper builds build/openworker-runner for this machine: build/openworker
# starts its sessions' runner (on Linux, its wall builder) from it when it lies
# beside it.
build_helper() {
	mkdir -p build
	CGO_ENABLED=0 go build -trimpath -o "build/${helper_name}" "$helper_pkg"
	step "built build/${helper_name}"
}

run_checks() {
	step "gofmt"
	local unformatted
	unformatted="$(gofmt -l .)"
	if [ -n "$unformatted" ]; then
		printf 'these files need gofmt -w:\n%s\n' "$unformatted" >&2
		exit 1
	fi

	step "go vet"
	go vet ./...
	go vet -tags mcpapart ./app/openworker

	step "go test -race (7 to 11 minutes on two cores; a line per package as it finishes)"
	# The end-to-end package runs real walls, daemons and sshds for minutes; go test's
	# default of ten minutes a package is too close on a busy two-core machine. go test
	# prints a package's line only after those listed before it, and the end-to-end package
	# is listed first: testprogress prints each as it finishes.
	go test -race -timeout 30m -json ./... 2>&1 | go run ./app/testprogress

	# Everything but the Cocoa shell must build for macOS without cgo, so
	# the core and the CLI stay portable and checkable from any OS.
	step "macOS build without cgo"
	GOOS=darwin GOARCH=arm64 CGO_ENABLED=0 go build ./...
	GOOS=darwin GOARCH=arm64 CGO_ENABLED=0 go vet ./...

	# The Cocoa shell only compiles with cgo on a Mac; type-check it (and
	# all darwin code) from here.
	step "macOS cgo type-check"
	go run ./ui/darwincheck ./...

	step "all checks passed"
}

case "${1:-}" in
app) build_app ;;
cli) build_cli ;;
helper) build_helper ;;
check) run_checks ;;
clean) rm -rf build ;;
help | -h | --help) usage ;;
"")
	usage >&2
	exit 2
	;;
*)
	echo "build.sh: unknown command ${1}" >&2
	usage >&2
	exit 2
	;;
esac
