package sbpl

import "fmt"

// LinkCheck is which end of a hard link or a clone Seatbelt checks against the profile: no
// public source settles it, so the evaluator can be told each answer in turn.
type LinkCheck int

const (
	// SourceOnly checks the existing file, not the new name.
	SourceOnly LinkCheck = iota
	// DestinationOnly checks the new name, not the existing file.
	DestinationOnly
	// BothEnds checks each; both must be allowed.
	BothEnds
)

func (c LinkCheck) String() string {
	switch c {
	case SourceOnly:
		return "source only"
	case DestinationOnly:
		return "destination only"
	case BothEnds:
		return "both ends"
	}
	return fmt.Sprintf("LinkCheck(%d)", int(c))
}

// EvalLink answers a hard link (file-link) or clone (file-clone) of src to the new name dst,
// as Seatbelt would if it checked the ends that c says.
func (p *Profile) EvalLink(op, src, dst string, c LinkCheck) (bool, error) {
	if op != "file-link" && op != "file-clone" {
		return false, fmt.Errorf("sbpl: %q is not file-link or file-clone", op)
	}
	var ends []string
	switch c {
	case SourceOnly:
		ends = []string{src}
	case DestinationOnly:
		ends = []string{dst}
	case BothEnds:
		ends = []string{src, dst}
	default:
		return false, fmt.Errorf("sbpl: unknown link check %d", int(c))
	}
	for _, path := range ends {
		d, err := p.Eval(Query{Op: op, Path: path})
		if err != nil || !d.Allowed {
			return false, err
		}
	}
	return true, nil
}
