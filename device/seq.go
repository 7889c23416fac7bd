package device

// Seq runs the operations in order and returns the first error; the operations after a failed
// one do not run (a failed upload must not be followed by a product on the garbage it left).
func Seq(ops ...func() error) error {
	for _, op := range ops {
		if err := op(); err != nil {
			return err
		}
	}
	return nil
}
