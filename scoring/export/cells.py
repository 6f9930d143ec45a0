"""Text cells made safe for spreadsheets: one rule for every CSV the site writes (the dataset
export and the pay report). A spreadsheet runs a cell that starts with ``=``, ``+``, ``-`` or
``@`` (or a tab or carriage return before one) as a formula; such a text cell gets a leading
apostrophe, as OWASP's "CSV Injection" page recommends. No Django import, so every app may use it.
"""

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(value: object) -> object:
    """A text cell a spreadsheet would run as a formula, made plain text (a leading apostrophe)."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return "" if value is None else value
