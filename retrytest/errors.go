package retrytest

// CyclicError returns an error whose Unwrap returns the error itself.
// errors.Is and errors.As never return on such a chain, nor does any code
// that follows Unwrap without a bound. A classifier must return on it
// (retry.Classify looks at no more than the first 100 errors of a chain;
// see retry.FiniteChain): use it to test that yours does.
func CyclicError() error { return &cyclic{} }

// CyclicJoin returns an error whose Unwrap() []error holds another error
// and the error itself: a cycle through a join, as a buggy errors.Join
// wrapper makes.
func CyclicJoin() error { return &cyclicJoin{} }

type cyclic struct{}

func (e *cyclic) Error() string { return "retrytest: cyclic error" }
func (e *cyclic) Unwrap() error { return e }

type cyclicJoin struct{}

func (e *cyclicJoin) Error() string   { return "retrytest: cyclic join" }
func (e *cyclicJoin) Unwrap() []error { return []error{errLeaf, e} }

var errLeaf = leaf{}

type leaf struct{}

func (leaf) Error() string { return "retrytest: leaf" }
