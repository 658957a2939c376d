package policy

func init() { caseInsensitive = true }
