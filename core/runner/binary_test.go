package runner

import "testing"

func TestHelperBeside(t *testing.T) {
	have := map[string]bool{
		"/Applications/OpenWorker.app/Contents/Helpers/openworker-runner": true,
		"/Users/me/src/ow/build/openworker-runner":                        true,
	}
	exists := func(p string) bool { return have[p] }
	for _, tc := range []struct{ exe, want string }{
		{"/Applications/OpenWorker.app/Contents/MacOS/openworker", "/Applications/OpenWorker.app/Contents/Helpers/openworker-runner"},
		{"/Users/me/src/ow/build/openworker", "/Users/me/src/ow/build/openworker-runner"},
		{"/usr/local/bin/openworker", "/usr/local/bin/openworker"},
		{"/Other.app/Contents/MacOS/openworker", "/Other.app/Contents/MacOS/openworker"},
	} {
		if got := helperBeside(tc.exe, exists); got != tc.want {
			t.Errorf("helperBeside(%s) = %s, want %s", tc.exe, got, tc.want)
		}
	}
}
