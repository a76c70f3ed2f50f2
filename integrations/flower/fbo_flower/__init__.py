"""fbo on Flower: the ServerApp runs fbo's server, each SuperNode's ClientApp one fbo agent."""
