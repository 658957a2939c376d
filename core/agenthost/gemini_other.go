//go:build !darwin

package agenthost

// geminiSystemDir is where gemini-cli reads this machine's own settings and policies.
const geminiSystemDir = "/etc/gemini-cli"
