"""The API's JSON parser: DRF's, with deep nesting answered as a parse error.

Python's json module recurses once per nesting level, so a body like ``[[[[...]]]]`` a
hundred thousand levels deep raises RecursionError, which DRF's JSONParser does not catch
(it catches ValueError only) and which would surface as a 500. No request of this API nests
more than a few levels, so such a body is malformed input and gets the usual 400.
"""

from rest_framework import parsers
from rest_framework.exceptions import ParseError


class JSONParser(parsers.JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError as error:
            raise ParseError("JSON parse error - the document is nested too deeply") from error
