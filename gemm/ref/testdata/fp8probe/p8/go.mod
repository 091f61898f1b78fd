module p8

go 1.24
