package web

import (
	_ "embed"
	"net/http"

	"github.com/gin-gonic/gin"
)

// openAPIDoc is the OpenAPI 3 document of the API. TestOpenAPIMatchesRoutes
// holds it to the routes New registers, both ways.
//
//go:embed openapi.json
var openAPIDoc []byte

// openAPI serves GET /api/v1/openapi.json.
func (s *Server) openAPI(c *gin.Context) {
	c.Data(http.StatusOK, "application/json", openAPIDoc)
}
