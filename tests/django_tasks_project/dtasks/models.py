from django.db import models


class Ran(models.Model):
    """What a task ran, in the order it ran (written by the worker)."""

    name = models.CharField(max_length=100)
