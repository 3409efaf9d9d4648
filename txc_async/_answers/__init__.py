"""An answer made a result or an error: `errors` tells an error answer by its status and its
body's shape, `results` decodes a success answer into typed values."""
