"""The verify page and its API routes (being built)."""

from fastapi import APIRouter

router = APIRouter()
