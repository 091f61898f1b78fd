package cudaload

// Driver is the driver the context was made with (its Version decides,
// for example, which embedded kernel variant the driver can load).
func (c *Context) Driver() *Driver {
	if c == nil {
		return nil
	}
	return c.drv
}
