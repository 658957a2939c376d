// Package linux is the Linux enforcement back end: it starts the tool runner behind a wall of
// namespaces (mount, PID, network, IPC, UTS, and a user namespace unless the caller is root),
// a minimal root of bind mounts reached with pivot_root, a read-only /proc, dropped
// capabilities, no_new_privs, Landlock as a second wall and a seccomp filter as a third, each
// on every thread. In allowlist and none modes the sandbox has a network of its own holding
// only lo: its own servers listen and are reached there, and nothing else is. In allowlist
// mode the builder also creates there the proxy's listening socket (at 127.0.0.1 and [::1])
// and one for each forwarded host loopback port, and hands them to the core, which serves the
// proxy and relays the forwards under the allow list; a program that ignores the proxy
// reaches only those. Where the machine delegates cgroups,
// each sandbox gets one of its own, with a process, memory and CPU limit (cgroup_linux.go),
// and where it lets the caller mount, its private tmp is a tmpfs of bounded size
// (tmp_linux.go); what is not in force is said in the Active list.
//
// Go cannot run code between fork and exec, so the wall is built by the same binary started
// again in a wall-builder mode: every binary that uses this package must call MaybeRunInit
// first thing in main (and in TestMain). The builder becomes PID 1 of the sandbox, reaps its
// orphans, and takes every process in it down when it ends.
//
// The package decides nothing about what a session may reach; that is policy.Policy. It does
// not serve the proxy either; it hands the listener to whoever does. On other systems it
// compiles to a provider whose Status says it is Linux-only and whose Start refuses.
package linux
