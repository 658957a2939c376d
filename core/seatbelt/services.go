package seatbelt

// machService is one macOS service a sandboxed command may look up, and why.
type machService struct {
	name, why string
	// egress says the service reaches the network on a client's behalf, so a session with no
	// network does not get it.
	egress bool
}

// machServices is the whole list of macOS services (mach-lookup) a session may reach. Every
// other service is denied; leftOutServices says why for the ones peers allow.
var machServices = []machService{
	{name: "com.apple.system.opendirectoryd.libinfo", why: "user and group lookups (getpwuid, getgrgid): whoami, id, ls -l, ssh and git need them; codex, sandbox-runtime, fence"},
	{name: "com.apple.system.opendirectoryd.membership", why: "group membership checks (getgrouplist, mbr_*); sandbox-runtime, fence"},
	{name: "com.apple.logd", why: "logging through os_log: every program that links Foundation writes there; sandbox-runtime, fence"},
	{name: "com.apple.system.logger", why: "logging through the older asl/syslog interface; sandbox-runtime, fence"},
	{name: "com.apple.system.notification_center", why: "notify(3), which libSystem uses to learn that the time zone, the user database or the resolver changed; sandbox-runtime, fence"},
	{name: "com.apple.trustd", why: "certificate checks (TLS through Security.framework, Go's crypto/x509 on macOS); left out with no network: trustd fetches issuers and revocation lists outside the sandbox", egress: true},
	{name: "com.apple.trustd.agent", why: "certificate checks, the per-user trust agent; left out with no network, as trustd; sandbox-runtime, fence", egress: true},
	{name: "com.apple.SystemConfiguration.configd", why: "the system configuration: network interfaces, proxy and host name settings; fence"},
	{name: "com.apple.SystemConfiguration.DNSConfiguration", why: "the system configuration: which DNS servers the resolver uses; fence"},
}

// leftOutServices are services peers' profiles allow that ours denies, each with why. They are
// written into the profile as comments, so a person reading it sees what was weighed.
var leftOutServices = []machService{
	{name: "com.apple.coreservices.launchservicesd", why: "LaunchServices: `open` would start an app outside the sandbox"},
	{name: "com.apple.lsd.mapdb", why: "LaunchServices' database, the same door"},
	{name: "com.apple.pasteboard.1", why: "the person's clipboard"},
	{name: "com.apple.SecurityServer", why: "the keychain"},
	{name: "com.apple.securityd.xpc", why: "the keychain's newer interface"},
	{name: "com.apple.distributed_notifications@Uv3", why: "posts notifications to the person's running apps"},
	{name: "com.apple.FSEvents", why: "file events name changed paths anywhere on the disk, the home folder too"},
	{name: "com.apple.PowerManagement.control", why: "power assertions: a command has no need to keep the Mac awake"},
	{name: "com.apple.bsd.dirhelper", why: "creates per-user temp folders, which already exist; the sandbox has its own"},
	{name: "com.apple.audio.systemsoundserver", why: "sound: not a command-line need"},
	{name: "com.apple.fonts", why: "font services: not a command-line need"},
	{name: "com.apple.dnssd.service", why: "mDNSResponder's lookup service: the egress proxy resolves names"},
}

// sysctlNames are the kernel values a sandboxed command may read: what runtimes ask about the
// machine (CPU count and features, page size, OS version) and about their own processes. The
// names are those codex's, sandbox-runtime's and fence's profiles allow. kern.bootargs, the
// machine's boot arguments, is read by every process as it starts (codex PR 11277's log);
// sandbox-runtime, fence and greywall allow it, and refused it ends every command's report.
// kern.tcsm_enable is what V8 reads before sizing its threads (sandbox-runtime, fence).
//
// Other processes' command lines: kern.procargs2 (and kern.procargs) is not here, nor
// kern.proc.all. Whether the kernel checks a read of kern.procargs2 by number against these
// names is disputed (nono issue 1821 reports that it has no registered name and is reachable
// only by its number; agent-safehouse PR 150 denies it by name), so this list does not claim
// to hide them; what holds them back is that no rule names them and the default denies, and
// `openworker sandbox check` on a Mac is the judge: it runs ps on its own process, outside the
// wall, and says whether the command line showed.
var sysctlNames = []string{
	"hw.activecpu", "hw.busfrequency_compat", "hw.byteorder", "hw.cacheconfig", "hw.cachelinesize",
	"hw.cachelinesize_compat", "hw.cpufamily", "hw.cpufrequency", "hw.cpufrequency_compat",
	"hw.cputype", "hw.l1dcachesize", "hw.l1dcachesize_compat", "hw.l1icachesize",
	"hw.l1icachesize_compat", "hw.l2cachesize", "hw.l2cachesize_compat", "hw.l3cachesize",
	"hw.l3cachesize_compat", "hw.logicalcpu", "hw.logicalcpu_max", "hw.machine", "hw.memsize",
	"hw.model", "hw.ncpu", "hw.nperflevels", "hw.packages", "hw.pagesize", "hw.pagesize_compat",
	"hw.physicalcpu", "hw.physicalcpu_max", "hw.tbfrequency", "hw.tbfrequency_compat",
	"hw.vectorunit",
	"kern.argmax", "kern.bootargs", "kern.boottime", "kern.hostname", "kern.maxfiles", "kern.maxfilesperproc",
	"kern.maxproc", "kern.ngroups", "kern.osproductversion", "kern.osrelease", "kern.ostype",
	"kern.osvariant_status", "kern.osversion", "kern.secure_kernel", "kern.tcsm_available", "kern.tcsm_enable",
	"kern.usrstack64", "kern.version", "kern.willshutdown",
	"machdep.cpu.brand_string", "machdep.ptrauth_enabled", "security.mac.lockdown_mode_state",
	"vm.loadavg", "vm.pagesize",
}

// quietServices are services Foundation-linked programs look up as they start and do without
// when refused. They stay denied, without a report: each would otherwise end the error output
// of nearly every command (macOS review A3).
var quietServices = []machService{
	{name: "com.apple.cfprefsd.agent", why: "preferences: cfprefsd reads the account's own preference files for the caller"},
	{name: "com.apple.cfprefsd.daemon", why: "preferences, the system side"},
	{name: "com.apple.diagnosticd", why: "diagnostic logging's live stream; os_log still reaches logd"},
	{name: "com.apple.analyticsd", why: "usage analytics"},
	{name: "com.apple.TrustEvaluationAgent", why: "an older trust agent curl asks for; certificate checks work through trustd"},
	{name: "com.apple.CoreServices.coreservicesd", why: "CoreServices' file-type and app database; LaunchServices stays out too"},
}

// sysctlPrefixes are families of kernel values a sandboxed command may read, each with why.
var sysctlPrefixes = []struct{ prefix, why string }{
	{"hw.optional.", "CPU features, which runtimes and compilers probe"},
	{"hw.perflevel", "performance and efficiency core counts"},
	{"machdep.cpu.", "CPU model and features"},
	{"kern.proc.pid.", "a process's own kinfo_proc (Go, Node and Python read their own)"},
	{"kern.proc.pgrp.", "the members of a process group, which job control reads"},
	{"kern.sysv.", "System V IPC limits: Python's ProcessPoolExecutor reads one through sysconf(SC_SEM_NSEMS_MAX) (claude-code issue 81032, codex issue 22405)"},
	{"net.routetable.", "the interface list, for Node's os.networkInterfaces(); codex, sandbox-runtime, fence"},
	{"sysctl.", "the sysctl tree's own names (name2oid, oidfmt, next), which sysctl(8) and sysctlbyname use to look a value up, and sysctl.proc_cputype and proc_translated"},
}
