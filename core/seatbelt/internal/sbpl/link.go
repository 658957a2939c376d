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
	// SourceAndCreate checks the existing file against the link or clone, and the new name
	// as the file-write-create it makes. XNU's link hook (mac_vnode_check_link) hands a
	// policy the existing file and the new name's folder and name, so a policy may check the
	// name as a create rather than as a link.
	SourceAndCreate
	// CreateOnly checks the new name as a file-write-create, and neither end as a link.
	CreateOnly
)

func (c LinkCheck) String() string {
	switch c {
	case SourceOnly:
		return "source only"
	case DestinationOnly:
		return "destination only"
	case BothEnds:
		return "both ends"
	case SourceAndCreate:
		return "the existing file, and the new name as a create"
	case CreateOnly:
		return "the new name as a create only"
	}
	return fmt.Sprintf("LinkCheck(%d)", int(c))
}

// EvalLink answers a hard link (file-link) or clone (file-clone) of src to the new name dst,
// as Seatbelt would if it checked the ends that c says.
func (p *Profile) EvalLink(op, src, dst string, c LinkCheck) (bool, error) {
	if op != "file-link" && op != "file-clone" {
		return false, fmt.Errorf("sbpl: %q is not file-link or file-clone", op)
	}
	var checks []Query
	switch c {
	case SourceOnly:
		checks = []Query{{Op: op, Path: src}}
	case DestinationOnly:
		checks = []Query{{Op: op, Path: dst}}
	case BothEnds:
		checks = []Query{{Op: op, Path: src}, {Op: op, Path: dst}}
	case SourceAndCreate:
		checks = []Query{{Op: op, Path: src}, {Op: "file-write-create", Path: dst}}
	case CreateOnly:
		checks = []Query{{Op: "file-write-create", Path: dst}}
	default:
		return false, fmt.Errorf("sbpl: unknown link check %d", int(c))
	}
	for _, q := range checks {
		d, err := p.Eval(q)
		if err != nil || !d.Allowed {
			return false, err
		}
	}
	return true, nil
}
