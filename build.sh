#!/usr/bin/env bash
# Builds the OpenWorker menu-bar app and runs the project's checks.
# Run ./build.sh help for the commands.
set -euo pipefail
cd "$(dirname "$0")"

readonly app_name="OpenWorker"
readonly bundle="build/${app_name}.app"
readonly main_pkg="./app/openworker"

# darwinkit v0.5.0's libffi bridge keeps a pointer into a slice that Go 1.25
# and later allocate on the stack; the app then aborts at its first Cocoa
# delegate callback. This turns that stack allocation off for darwinkit only.
# "qn" is "n" (never stack-allocate) without a log line for every site.
readonly darwinkit_gcflags='github.com/progrium/darwinkit/...=-d=variablemakehash=qn'

usage() {
	cat <<'USAGE'
usage: ./build.sh COMMAND

commands:
  app     build build/OpenWorker.app: the openworker binary with cgo (the
          menu-bar app needs it) for arm64 and amd64 (joined with lipo when
          both build), Info.plist and resources/, ad-hoc signed, and zipped
          for release as build/OpenWorker-VERSION-macos.zip. macOS only.
  cli     build build/openworker, the CLI and daemon for this machine. On
          Linux it is static, without cgo: it has no use for cgo there, and
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

# build_arch builds the app's binary for one CPU (arm64 or amd64) into $2.
build_arch() {
	local arch="$1" out="$2" version="$3"
	# The go command passes clang -arch for the target, so an Apple silicon Mac
	# with the Command Line Tools builds the Intel binary too.
	CGO_ENABLED=1 GOOS=darwin GOARCH="$arch" go build -trimpath \
		-gcflags="$darwinkit_gcflags" \
		-ldflags="-X main.version=${version}" \
		-o "$out" "$main_pkg"
}

build_app() {
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
	mkdir -p "$bundle/Contents/MacOS" "$bundle/Contents/Resources" build/arch

	# Both CPUs when both build, joined into one universal binary. This Mac's
	# own CPU must build; the other is skipped with a warning (a toolchain
	# without it), so a developer build never fails for a release concern.
	local host arch
	local built=()
	case "$(uname -m)" in
	arm64) host=arm64 ;;
	*) host=amd64 ;;
	esac
	for arch in arm64 amd64; do
		if build_arch "$arch" "build/arch/openworker-${arch}" "$version"; then
			built+=("build/arch/openworker-${arch}")
		elif [ "$arch" = "$host" ]; then
			echo "build.sh app: the ${arch} build failed" >&2
			exit 1
		else
			step "the ${arch} build failed; the app is ${host} only"
		fi
	done
	if [ "${#built[@]}" -gt 1 ] && command -v lipo >/dev/null 2>&1; then
		step "joining arm64 and amd64 with lipo"
		lipo -create -output "$bundle/Contents/MacOS/openworker" "${built[@]}"
	else
		cp "build/arch/openworker-${host}" "$bundle/Contents/MacOS/openworker"
	fi

	cp Info.plist "$bundle/Contents/Info.plist"
	cp -R resources/. "$bundle/Contents/Resources/"
	if command -v plutil >/dev/null 2>&1; then
		plutil -lint "$bundle/Contents/Info.plist" >/dev/null
	fi

	if command -v codesign >/dev/null 2>&1; then
		step "ad-hoc signing"
		# Ad hoc ("-"): enough for the app to run on this Mac; a
		# distributed build needs a Developer ID signature and notarization.
		codesign --force --sign - --timestamp=none "$bundle"
		codesign --verify --strict "$bundle"
	else
		step "codesign not found: ${bundle} is unsigned"
	fi

	# ditto keeps the signature and the bundle's metadata, which zip can lose.
	local zip="build/${app_name}-${version}-macos.zip"
	rm -f "$zip"
	ditto -c -k --keepParent "$bundle" "$zip"
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
	CGO_ENABLED="$cgo" go build -trimpath -o build/openworker "$main_pkg"
	step "built build/openworker"
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

	step "go test -race"
	go test -race ./...

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
