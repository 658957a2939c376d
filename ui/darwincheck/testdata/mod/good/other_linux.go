// This file is not part of a darwin build, so its mistake must not be
// reported: it shows the check looks at the files darwin would compile.
package good

var notDarwin int = "a string"
