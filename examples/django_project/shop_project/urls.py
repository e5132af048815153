from django.contrib import admin
from django.urls import path
from shop import views

urlpatterns = [
    path("admin/", admin.site.urls),  # its login page logs staff in for the dashboard too
    path("orders/", views.place_order),
]
