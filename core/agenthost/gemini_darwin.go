package agenthost

// geminiSystemDir is where gemini-cli reads this machine's own settings and policies.
const geminiSystemDir = "/Library/Application Support/GeminiCli"
