package seatbelt

// machService is one macOS service a sandboxed command may look up, and why.
type machService struct {
	name, why string
}

// machServices is the whole list of macOS services (mach-lookup) a session may reach. Every
// other service is denied: LaunchServices above all (`open` would start an app outside the
// sandbox), the pasteboard (the person's clipboard), the keychain (com.apple.SecurityServer),
// preferences (cfprefsd, which reads the account's files) and TrustEvaluationAgent.
var machServices = []machService{
	{"com.apple.system.opendirectoryd.libinfo", "user and group lookups (getpwuid, getgrgid): whoami, id, ls -l, ssh and git need them"},
	{"com.apple.system.opendirectoryd.membership", "group membership checks (getgrouplist, mbr_*)"},
	{"com.apple.logd", "logging through os_log: every program that links Foundation writes there"},
	{"com.apple.system.logger", "logging through the older asl/syslog interface"},
	{"com.apple.trustd", "certificate checks (TLS through Security.framework, Go's crypto/x509 on macOS)"},
	{"com.apple.trustd.agent", "certificate checks, the per-user trust agent"},
	{"com.apple.SystemConfiguration.configd", "the system configuration: network interfaces, proxy and host name settings"},
	{"com.apple.SystemConfiguration.DNSConfiguration", "the system configuration: which DNS servers the proxy and resolver use"},
}

// sysctls are the kernel values a sandboxed command may read: what runtimes ask about the
// machine (CPU count and features, page size, OS version) and about their own processes.
// kern.procargs2 and kern.proc.all are not here: they show other processes' command lines.
var sysctlNames = []string{
	"hw.activecpu", "hw.byteorder", "hw.cachelinesize", "hw.cachelinesize_compat", "hw.cpufamily",
	"hw.cpufrequency", "hw.cpufrequency_compat", "hw.cputype", "hw.l1dcachesize", "hw.l1icachesize",
	"hw.l2cachesize", "hw.l3cachesize", "hw.logicalcpu", "hw.logicalcpu_max", "hw.machine",
	"hw.memsize", "hw.model", "hw.ncpu", "hw.nperflevels", "hw.packages", "hw.pagesize",
	"hw.pagesize_compat", "hw.physicalcpu", "hw.physicalcpu_max", "hw.tbfrequency",
	"hw.tbfrequency_compat", "hw.vectorunit",
	"kern.argmax", "kern.boottime", "kern.hostname", "kern.maxfiles", "kern.maxfilesperproc",
	"kern.maxproc", "kern.ngroups", "kern.osproductversion", "kern.osrelease", "kern.ostype",
	"kern.osvariant_status", "kern.osversion", "kern.secure_kernel", "kern.usrstack64",
	"kern.version", "machdep.cpu.brand_string", "sysctl.proc_cputype", "sysctl.proc_translated",
	"vm.loadavg", "vm.pagesize",
}

var sysctlPrefixes = []string{
	"hw.optional.", "hw.perflevel", "machdep.cpu.", "kern.proc.pid.", "kern.proc.pgrp.",
}
