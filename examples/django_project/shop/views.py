from django.db import transaction
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from shop.models import Order
from shop.tasks import invoice_total, send_receipt


@csrf_exempt  # an API endpoint of the example
@require_POST
def place_order(request: HttpRequest) -> JsonResponse:
    """Take an order; its receipt job and its invoice task commit with it, or none does."""
    with transaction.atomic():
        order = Order.objects.create(email=request.POST["email"])
        job = send_receipt.enqueue(order.id)
        invoice = invoice_total.enqueue(order.id)  # Django's API, the same transaction
    return JsonResponse({"order": order.id, "receipt_job": job.id, "invoice": invoice.id})
