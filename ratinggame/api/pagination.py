from rest_framework.pagination import PageNumberPagination


class Pagination(PageNumberPagination):
    """``?page=N`` and ``?page_size=N`` (at most 500); the answer has count, next, previous, results."""

    page_size_query_param = "page_size"
    max_page_size = 500
